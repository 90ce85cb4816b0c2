import { describe, expect, it } from 'vitest';
import { tokenize } from '../../../../src/repository/config/tokenizer.js';
import { expectError } from './helpers.js';

const kinds = (src: string) => tokenize(src, 'f').map((t) => [t.kind, t.text]);
const one = (src: string) => tokenize(src, 'f')[0]!;

describe('text-format tokenizer', () => {
  it('splits identifiers, symbols and numbers with 1-based positions', () => {
    const tokens = tokenize('name: "x"\n  dims [ -1, 2 ]', 'f');
    expect(tokens.map((t) => [t.kind, t.text, t.pos.line, t.pos.column, t.offset])).toEqual([
      ['identifier', 'name', 1, 1, 0],
      ['symbol', ':', 1, 5, 4],
      ['string', 'x', 1, 7, 6],
      ['identifier', 'dims', 2, 3, 12],
      ['symbol', '[', 2, 8, 17],
      ['symbol', '-', 2, 10, 19],
      ['integer', '1', 2, 11, 20],
      ['symbol', ',', 2, 12, 21],
      ['integer', '2', 2, 14, 23],
      ['symbol', ']', 2, 16, 25],
      ['eof', '', 2, 17, 26],
    ]);
  });

  it('skips # comments to the end of the line, and CRLF line ends count once', () => {
    const tokens = tokenize('# header\r\na: 1 # trailing\r\n#\nb', 'f');
    expect(tokens.map((t) => [t.text, t.pos.line, t.pos.column])).toEqual([
      ['a', 2, 1],
      [':', 2, 2],
      ['1', 2, 4],
      ['b', 4, 1],
      ['', 4, 2],
    ]);
  });

  it('reads decimal, hex, octal and float literals as written', () => {
    expect(kinds('12 0x1F 0X0a 017 0 1.5 .5 1. 2e3 1.5E-2 3f 2.5F')).toEqual([
      ['integer', '12'],
      ['integer', '0x1F'],
      ['integer', '0X0a'],
      ['integer', '017'],
      ['integer', '0'],
      ['float', '1.5'],
      ['float', '.5'],
      ['float', '1.'],
      ['float', '2e3'],
      ['float', '1.5E-2'],
      ['float', '3f'],
      ['float', '2.5F'],
      ['eof', ''],
    ]);
  });

  it('rejects malformed numbers at their position', () => {
    expectError(() => tokenize('a: 0x', 'f'), 'f:1:4: "0x" must be followed by hex digits');
    expectError(() => tokenize('a: 019', 'f'), 'f:1:4: invalid octal number "019"');
    expectError(() => tokenize('a: 1e', 'f'), 'f:1:4: exponent has no digits');
    expectError(() => tokenize('a: 12abc', 'f'), 'f:1:6: need space between number "12" and "a"');
    expectError(() => tokenize('a: 1.5.2', 'f'), 'f:1:7: need space between number "1.5" and "."');
  });

  it('reads strings in both quote kinds with every escape', () => {
    expect(one(String.raw`"a\"b'c"`).text).toBe(`a"b'c`);
    expect(one(String.raw`'a\'b"c'`).text).toBe(`a'b"c`);
    expect(one(String.raw`"\n\t\r\\\a\b\f\v\?"`).text).toBe('\n\t\r\\\x07\b\f\v?');
    expect(one(String.raw`"\101\60\0"`).text).toBe('A0\0');
    expect(one(String.raw`"\x41\x4a\x7"`).text).toBe('AJ\x07');
    expect(one(String.raw`"\u00e9\U0001F600"`).text).toBe('é😀');
    expect(one(String.raw`"\ud83d\ude00"`).text).toBe('😀');
    expect(one('"héllo 😀"').text).toBe('héllo 😀');
    // Octal and hex escapes are bytes; together they may spell UTF-8.
    expect(one(String.raw`"\303\251\xc3\xa9"`).text).toBe('éé');
  });

  it('rejects bad strings with the position of the string or the escape', () => {
    expectError(() => tokenize('a: "abc', 'f'), 'f:1:4: unterminated string');
    expectError(() => tokenize('a: "ab\nc"', 'f'), 'f:1:4: unterminated string');
    expectError(() => tokenize(String.raw`a: "x\qy"`, 'f'), String.raw`f:1:6: invalid escape sequence "\q"`);
    expectError(() => tokenize(String.raw`a: "\x"`, 'f'), String.raw`f:1:5: \x must be followed by at least one hex digit`);
    expectError(() => tokenize(String.raw`a: "\u12"`, 'f'), String.raw`f:1:5: \u must be followed by 4 hex digits`);
    expectError(() => tokenize(String.raw`a: "\ud83d"`, 'f'), String.raw`f:1:5: high surrogate in \u escape is not followed by a low surrogate`);
    expectError(() => tokenize(String.raw`a: "\ude00"`, 'f'), String.raw`f:1:5: unpaired low surrogate in \u escape`);
    expectError(() => tokenize(String.raw`a: "\U00110000"`, 'f'), String.raw`f:1:5: code point in \U escape is beyond U+10FFFF`);
    expectError(() => tokenize(String.raw`a: "\777"`, 'f'), 'f:1:5: octal escape is larger than one byte');
    expectError(() => tokenize(String.raw`a: "\xff"`, 'f'), 'f:1:4: string is not valid UTF-8');
  });

  it('rejects characters outside the grammar', () => {
    expectError(() => tokenize('a: 1\n  b = 2', 'f'), 'f:2:5: unexpected character "="');
    expectError(() => tokenize('[ext.field]: 1', 'f'), 'f:1:5: unexpected character "."');
  });

  describe('JSON mode', () => {
    it('has no # comments and no single quotes', () => {
      expectError(() => tokenize('{} # x', 'c', { json: true }), 'c:1:4: unexpected character "#"');
      expectError(() => tokenize("{'a': 1}", 'c', { json: true }), `c:1:2: unexpected character "'"`);
    });

    it('accepts exactly the JSON escapes', () => {
      expect(tokenize(String.raw`"a\/b\u00e9\n"`, 'c', { json: true })[0]!.text).toBe('a/bé\n');
      expectError(() => tokenize(String.raw`"\x41"`, 'c', { json: true }), String.raw`c:1:2: invalid escape sequence "\x" in JSON`);
      expectError(() => tokenize(String.raw`"\a"`, 'c', { json: true }), String.raw`c:1:2: invalid escape sequence "\a" in JSON`);
      expectError(() => tokenize('"a\tb"', 'c', { json: true }), 'c:1:3: control character in a JSON string');
    });

    it('rejects \\/ outside JSON', () => {
      expectError(() => tokenize(String.raw`"\/"`, 'f'), String.raw`f:1:2: invalid escape sequence "\/"`);
    });
  });
});
