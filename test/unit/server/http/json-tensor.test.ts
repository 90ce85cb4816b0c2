import { describe, expect, it } from 'vitest';
import { decodeJsonData, encodeJsonData } from '../../../../src/server/http/codec/json-tensor.js';
import { errorOf } from './support.js';

const decode = (datatype: Parameters<typeof decodeJsonData>[1], shape: number[], data: unknown) => decodeJsonData('x', datatype, shape, data);
const messageOf = (fn: () => unknown) => errorOf(fn).message;

describe('JSON tensor data → storage', () => {
  it('takes an empty tensor whose zero dimension sits beside huge ones (their product is not NaN)', () => {
    const huge = Array<number>(22).fill(2 ** 53 - 1);
    expect(decode('FP32', [...huge, 0], [])).toEqual(new Float32Array(0));
  });

  it('decodes every JSON-representable datatype into its storage', () => {
    expect(decode('BOOL', [3], [true, false, true])).toEqual(new Uint8Array([1, 0, 1]));
    expect(decode('UINT8', [2], [0, 255])).toEqual(new Uint8Array([0, 255]));
    expect(decode('UINT16', [2], [0, 65535])).toEqual(new Uint16Array([0, 65535]));
    expect(decode('UINT32', [2], [0, 4294967295])).toEqual(new Uint32Array([0, 4294967295]));
    expect(decode('UINT64', [2], [0, 18446744073709551615n])).toEqual(new BigUint64Array([0n, 18446744073709551615n]));
    expect(decode('INT8', [2], [-128, 127])).toEqual(new Int8Array([-128, 127]));
    expect(decode('INT16', [2], [-32768, 32767])).toEqual(new Int16Array([-32768, 32767]));
    expect(decode('INT32', [2], [-2147483648, 2147483647])).toEqual(new Int32Array([-2147483648, 2147483647]));
    expect(decode('INT64', [3], [-9223372036854775808n, 5, 9223372036854775807n])).toEqual(new BigInt64Array([-9223372036854775808n, 5n, 9223372036854775807n]));
    expect(decode('FP32', [2], [1.5, -2])).toEqual(new Float32Array([1.5, -2]));
    expect(decode('FP64', [2], [0.1, 1e300])).toEqual(new Float64Array([0.1, 1e300]));
    expect(decode('BYTES', [2], ['hi', 'né'])).toEqual([new TextEncoder().encode('hi'), new TextEncoder().encode('né')]);
  });

  it('accepts nested and flat data for the same shape', () => {
    const flat = decode('INT32', [2, 3], [1, 2, 3, 4, 5, 6]);
    const nested = decode(
      'INT32',
      [2, 3],
      [
        [1, 2, 3],
        [4, 5, 6],
      ],
    );
    expect(nested).toEqual(flat);
    expect(
      decode(
        'FP32',
        [1, 2, 2],
        [
          [
            [1, 2],
            [3, 4],
          ],
        ],
      ),
    ).toEqual(new Float32Array([1, 2, 3, 4]));
  });

  it('accepts a scalar shape with one element and an empty shape dimension with none', () => {
    expect(decode('FP32', [], [7])).toEqual(new Float32Array([7]));
    expect(decode('FP32', [0, 3], [])).toEqual(new Float32Array([]));
  });

  it('requires the element count the shape gives', () => {
    expect(messageOf(() => decode('FP32', [2, 2], [1, 2, 3]))).toBe("input 'x': shape [2,2] needs 4 elements, 'data' has 3");
    expect(messageOf(() => decode('FP32', [1], [[1, 2]]))).toBe("input 'x': shape [1] needs 1 elements, 'data' has 2");
  });

  it('requires an array', () => {
    expect(messageOf(() => decode('FP32', [1], 1))).toBe("input 'x': 'data' must be an array");
    expect(messageOf(() => decode('FP32', [1], { a: 1 }))).toBe("input 'x': 'data' must be an array");
  });

  it('refuses FP16 and BF16, which have no JSON form', () => {
    expect(messageOf(() => decode('FP16', [1], [1]))).toBe("input 'x': FP16 has no JSON representation; send it as binary data");
    expect(messageOf(() => decode('BF16', [1], [1]))).toBe("input 'x': BF16 has no JSON representation; send it as binary data");
  });

  it('rejects values of the wrong kind for each datatype', () => {
    expect(messageOf(() => decode('BOOL', [2], [true, 1]))).toBe("input 'x': element 1 must be true or false for BOOL, got 1");
    expect(messageOf(() => decode('BYTES', [1], [3]))).toBe("input 'x': element 0 must be a string for BYTES, got 3");
    expect(messageOf(() => decode('FP32', [1], ['1']))).toBe('input \'x\': element 0 must be a number for FP32, got "1"');
    expect(messageOf(() => decode('FP64', [1], [null]))).toBe("input 'x': element 0 must be a number for FP64, got null");
    expect(messageOf(() => decode('INT32', [2], [1, 1.5]))).toBe("input 'x': element 1 must be an integer for INT32, got 1.5");
    expect(messageOf(() => decode('UINT8', [1], [true]))).toBe("input 'x': element 0 must be an integer for UINT8, got true");
    expect(messageOf(() => decode('INT64', [1], [0.5]))).toBe("input 'x': element 0 must be an integer for INT64, got 0.5");
    expect(messageOf(() => decode('UINT64', [1], ['7']))).toBe('input \'x\': element 0 must be an integer for UINT64, got "7"');
  });

  it("rejects values out of each datatype's range", () => {
    const cases: [Parameters<typeof decodeJsonData>[1], unknown, string][] = [
      ['UINT8', 256, '256'],
      ['UINT8', -1, '-1'],
      ['UINT16', 65536, '65536'],
      ['UINT32', 4294967296, '4294967296'],
      ['INT8', 128, '128'],
      ['INT8', -129, '-129'],
      ['INT16', 32768, '32768'],
      ['INT32', 2147483648, '2147483648'],
      ['INT32', -2147483649, '-2147483649'],
      ['INT64', 9223372036854775808n, '9223372036854775808'],
      ['INT64', -9223372036854775809n, '-9223372036854775809'],
      ['UINT64', -1, '-1'],
      ['UINT64', 18446744073709551616n, '18446744073709551616'],
      ['FP32', 1e39, '1e+39'],
    ];
    for (const [datatype, value, text] of cases) {
      expect(messageOf(() => decode(datatype, [1], [value]))).toBe(`input 'x': element 0 (${text}) is out of range for ${datatype}`);
    }
  });

  it('reports the flat index of a bad element in nested data', () => {
    expect(
      messageOf(() =>
        decode(
          'INT8',
          [2, 2],
          [
            [1, 2],
            [3, 300],
          ],
        ),
      ),
    ).toBe("input 'x': element 3 (300) is out of range for INT8");
  });
});

describe('storage → JSON tensor data', () => {
  it('encodes every JSON-representable datatype as a flat array', () => {
    expect(encodeJsonData('y', 'BOOL', new Uint8Array([1, 0]))).toBe('[true,false]');
    expect(encodeJsonData('y', 'UINT8', new Uint8Array([0, 255]))).toBe('[0,255]');
    expect(encodeJsonData('y', 'UINT16', new Uint16Array([65535]))).toBe('[65535]');
    expect(encodeJsonData('y', 'UINT32', new Uint32Array([4294967295]))).toBe('[4294967295]');
    expect(encodeJsonData('y', 'UINT64', new BigUint64Array([18446744073709551615n]))).toBe('[18446744073709551615]');
    expect(encodeJsonData('y', 'INT8', new Int8Array([-128]))).toBe('[-128]');
    expect(encodeJsonData('y', 'INT16', new Int16Array([-32768]))).toBe('[-32768]');
    expect(encodeJsonData('y', 'INT32', new Int32Array([-1, 2]))).toBe('[-1,2]');
    expect(encodeJsonData('y', 'INT64', new BigInt64Array([-9223372036854775808n, 3n]))).toBe('[-9223372036854775808,3]');
    expect(encodeJsonData('y', 'FP32', new Float32Array([1.5, 0.1]))).toBe(`[1.5,${Math.fround(0.1)}]`);
    expect(encodeJsonData('y', 'FP64', new Float64Array([0.1, 1e-7]))).toBe('[0.1,1e-7]');
    expect(encodeJsonData('y', 'BYTES', [new TextEncoder().encode('a"b'), new TextEncoder().encode('né')])).toBe('["a\\"b","né"]');
    expect(encodeJsonData('y', 'FP32', new Float32Array([]))).toBe('[]');
  });

  it('prints non-finite floats as null', () => {
    expect(encodeJsonData('y', 'FP32', new Float32Array([NaN, Infinity, -Infinity, 1]))).toBe('[null,null,null,1]');
  });

  it('produces JSON that parses back to the values', () => {
    const text = encodeJsonData('y', 'FP32', new Float32Array([3.4028234663852886e38, 1e-45]));
    expect(new Float32Array(JSON.parse(text) as number[])).toEqual(new Float32Array([3.4028234663852886e38, 1e-45]));
  });

  it('refuses FP16 and BF16 outputs in JSON', () => {
    expect(messageOf(() => encodeJsonData('y', 'FP16', new Uint16Array([0])))).toBe("output 'y': FP16 has no JSON representation; request it with binary_data");
    expect(messageOf(() => encodeJsonData('y', 'BF16', new Uint16Array([0])))).toBe("output 'y': BF16 has no JSON representation; request it with binary_data");
  });
});
