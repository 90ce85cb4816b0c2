import { describe, expect, it } from 'vitest';
import { asCount, decodeParameters, parametersText, parseJson } from '../../../../src/server/http/codec/json-body.js';
import { errorOf } from './support.js';

describe('parseJson', () => {
  it('parses ordinary JSON without touching numbers', () => {
    expect(parseJson('{"a":[1,2.5,-3e2],"b":"x"}')).toEqual({ a: [1, 2.5, -300], b: 'x' });
  });

  it('keeps integers beyond 2^53 exact as bigint', () => {
    expect(parseJson('[9223372036854775807,-9223372036854775808,18446744073709551615]')).toEqual([9223372036854775807n, -9223372036854775808n, 18446744073709551615n]);
  });

  it('leaves 16-digit integers that are still safe as numbers', () => {
    expect(parseJson('[1000000000000000, 9007199254740991]')).toEqual([1000000000000000, 9007199254740991]);
  });

  it('does not rewrite long digit runs inside strings, fractions or exponents', () => {
    const text = '{"s":"12345678901234567890","f":0.12345678901234567,"e":1.5e12345678901234567,"n":12345678901234567890}';
    const parsed = parseJson(text) as Record<string, unknown>;
    expect(parsed.s).toBe('12345678901234567890');
    // biome-ignore lint/correctness/noPrecisionLoss: the text carries more digits than a double; the parse rounds as this literal does
    expect(parsed.f).toBe(0.12345678901234567);
    expect(parsed.e).toBe(Infinity);
    expect(parsed.n).toBe(12345678901234567890n);
  });

  it('handles escaped quotes in strings before a long integer', () => {
    expect(parseJson('["a\\"b", 12345678901234567890]')).toEqual(['a"b', 12345678901234567890n]);
  });

  it('rejects malformed JSON as INVALID_ARG', () => {
    const error = errorOf(() => parseJson('{"inputs": ['));
    expect(error.code).toBe('INVALID_ARG');
    expect(error.httpStatus).toBe(400);
    expect(error.message).toMatch(/^failed to parse the request JSON: /);
  });

  it('rejects a long integer as an object key (the rewrite would have made it a valid string key)', () => {
    expect(errorOf(() => parseJson('{12345678901234567890:1}')).code).toBe('INVALID_ARG');
  });

  it('rejects malformed JSON that holds a long integer too', () => {
    expect(errorOf(() => parseJson('[12345678901234567890,')).message).toMatch(/^failed to parse the request JSON: /);
  });
});

describe('parameters', () => {
  it('accepts scalar values', () => {
    expect(decodeParameters({ a: 1, b: 'x', c: true, d: 2n }, 'w')).toEqual({ a: 1, b: 'x', c: true, d: 2n });
    expect(decodeParameters(undefined, 'w')).toEqual({});
  });

  it('rejects a non-object and non-scalar values', () => {
    expect(errorOf(() => decodeParameters([1], 'the inference request')).message).toBe("the inference request 'parameters' must be a JSON object");
    expect(errorOf(() => decodeParameters({ a: { b: 1 } }, "input 'x'")).message).toBe("input 'x' parameter 'a' must be a string, number or boolean");
    expect(errorOf(() => decodeParameters({ a: null }, "input 'x'")).message).toBe("input 'x' parameter 'a' must be a string, number or boolean");
  });

  it('prints parameters with exact bigints', () => {
    expect(parametersText({ a: 1, b: 'x"y', c: false, d: 9223372036854775807n })).toBe('{"a":1,"b":"x\\"y","c":false,"d":9223372036854775807}');
  });

  it('reads counts', () => {
    expect(asCount(3)).toBe(3);
    expect(asCount(3n)).toBe(3);
    expect(asCount(-1)).toBeUndefined();
    expect(asCount(1.5)).toBeUndefined();
    expect(asCount('3')).toBeUndefined();
    expect(asCount(2n ** 60n)).toBeUndefined();
  });
});
