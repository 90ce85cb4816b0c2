import { describe, expect, it } from 'vitest';
import { jsonDepth, jsonDepthError } from '../../../../src/server/kit/json-depth.js';

const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('jsonDepth', () => {
  it('counts array and object nesting, ignoring brackets inside strings and escaped quotes', () => {
    expect(jsonDepth(bytes('1'), 64)).toBe(0);
    expect(jsonDepth(bytes('{"a":[1,[2]],"b":{}}'), 64)).toBe(3);
    expect(jsonDepth(bytes('{"a":"[[[[{{{{","b":"\\\\\\"[[["}'), 64)).toBe(1);
    expect(jsonDepth(bytes('["ü[é", ["日本"]]'), 64)).toBe(2);
  });

  it('stops scanning once past the limit, and honours an end offset', () => {
    expect(jsonDepth(bytes('[[[[[[[[]]]]]]]]'), 3)).toBe(4);
    expect(jsonDepth(bytes('[[]][[[[[['), 64, 4)).toBe(2);
  });

  it('answers INVALID_ARG for a body nested 100,000 deep, without recursion', () => {
    const deep = bytes(`{"inputs":[{"data":${'['.repeat(100_000)}1${']'.repeat(100_000)}}]}`);
    expect(jsonDepthError(deep, 64)).toMatchObject({ code: 'INVALID_ARG', message: 'the JSON nests deeper than 64 levels' });
    expect(jsonDepthError(bytes('[[[1]]]'), 64)).toBeUndefined();
  });
});
