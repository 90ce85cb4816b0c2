import { describe, expect, it } from 'vitest';
import { keyProblem, parseKeyFile } from '../../../src/security/keys.js';

describe('parseKeyFile', () => {
  it('reads one key a line, skipping blank lines, comments and surrounding whitespace', () => {
    const text = '# rotated 2025-01\nsk-one\n\n   sk-two  \r\n\t# old: sk-zero\nsk-three';
    expect(parseKeyFile(text, 'keys.txt')).toEqual(['sk-one', 'sk-two', 'sk-three']);
  });

  it('keeps a # inside a key (only a leading # starts a comment)', () => {
    expect(parseKeyFile('sk-a#b\n', 'k')).toEqual(['sk-a#b']);
  });

  it('names the file and line of a key with whitespace inside', () => {
    expect(() => parseKeyFile('sk-ok\nsk bad\n', 'keys.txt')).toThrow('keys.txt line 2: the key contains whitespace');
  });

  it.each(['', '\n\n', '# only a comment\n', '  \n# x\n'])('refuses a file without keys (%j): it would turn authentication off', (text) => {
    expect(() => parseKeyFile(text, 'keys.txt')).toThrow('keys.txt holds no keys');
  });
});

describe('keyProblem', () => {
  it.each([
    ['sk-123', undefined],
    ['', 'is empty'],
    ['a b', 'contains whitespace'],
    ['a\tb', 'contains whitespace'],
  ])('%j → %s', (key, problem) => {
    expect(keyProblem(key)).toBe(problem);
  });
});
