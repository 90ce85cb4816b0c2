import { describe, expect, it } from 'vitest';
import type { DataType, TensorData } from '../../../../src/contracts/tensors.js';
import { decodeBinaryData, encodeBinaryData, serializeBytesElements } from '../../../../src/server/http/codec/binary-tensor.js';
import { bytesOf, errorOf, framed } from './support.js';

const FIXED: [DataType, TensorData][] = [
  ['BOOL', new Uint8Array([1, 0, 1])],
  ['UINT8', new Uint8Array([0, 7, 255])],
  ['UINT16', new Uint16Array([0, 7, 65535])],
  ['UINT32', new Uint32Array([0, 7, 4294967295])],
  ['UINT64', new BigUint64Array([0n, 7n, 18446744073709551615n])],
  ['INT8', new Int8Array([-128, 0, 127])],
  ['INT16', new Int16Array([-32768, 0, 32767])],
  ['INT32', new Int32Array([-2147483648, 0, 2147483647])],
  ['INT64', new BigInt64Array([-9223372036854775808n, 0n, 9223372036854775807n])],
  ['FP16', new Uint16Array([0x3c00, 0x0000, 0xfc00])],
  ['FP32', new Float32Array([1.5, -0, 3.25])],
  ['FP64', new Float64Array([0.1, -1e300, 5])],
  ['BF16', new Uint16Array([0x3f80, 0x0000, 0xc000])],
];

describe('binary tensor data → storage', () => {
  it.each(FIXED)('decodes %s little-endian into its storage', (datatype, data) => {
    const decoded = decodeBinaryData('x', datatype, [3], bytesOf(data as ArrayBufferView));
    expect(decoded.constructor).toBe(data.constructor);
    expect(decoded).toEqual(data);
  });

  it('reads the wire as little-endian regardless of how the bytes were produced', () => {
    const wire = Buffer.alloc(8);
    wire.writeInt32LE(-2, 0);
    wire.writeFloatLE(0.5, 4);
    expect(decodeBinaryData('x', 'INT32', [1], wire.subarray(0, 4))).toEqual(new Int32Array([-2]));
    expect(decodeBinaryData('x', 'FP32', [1], wire.subarray(4))).toEqual(new Float32Array([0.5]));
  });

  it('views aligned bytes without copying and copies unaligned ones', () => {
    const body = Buffer.from(new ArrayBuffer(17));
    new Float32Array(body.buffer, 4, 2).set([1, 2]);
    const aligned = decodeBinaryData('x', 'FP32', [2], body.subarray(4, 12)) as Float32Array;
    expect(aligned.buffer).toBe(body.buffer);
    body.copy(body, 1, 4, 12);
    const unaligned = decodeBinaryData('x', 'FP32', [2], body.subarray(1, 9)) as Float32Array;
    expect(unaligned.buffer).not.toBe(body.buffer);
    expect(unaligned).toEqual(new Float32Array([1, 2]));
  });

  it('requires exactly the bytes the shape needs', () => {
    const error = errorOf(() => decodeBinaryData('x', 'FP32', [2, 2], Buffer.alloc(12)));
    expect(error.code).toBe('INVALID_ARG');
    expect(error.message).toBe("input 'x': binary_data_size 12 does not match shape [2,2] of FP32 (16 bytes)");
    expect(errorOf(() => decodeBinaryData('x', 'INT64', [1], Buffer.alloc(9))).message).toBe("input 'x': binary_data_size 9 does not match shape [1] of INT64 (8 bytes)");
  });

  it('rejects BOOL bytes other than 0 and 1', () => {
    expect(errorOf(() => decodeBinaryData('x', 'BOOL', [3], Buffer.from([1, 0, 2]))).message).toBe("input 'x': element 2 of BOOL data is 2, expected 0 or 1");
  });

  it('decodes BYTES elements framed by 4-byte little-endian lengths', () => {
    const decoded = decodeBinaryData('x', 'BYTES', [3], framed('ab', '', 'né')) as Uint8Array[];
    expect(decoded.map((e) => Buffer.from(e).toString('utf8'))).toEqual(['ab', '', 'né']);
  });

  it('rejects a truncated BYTES length prefix', () => {
    const body = Buffer.concat([framed('ab'), Buffer.from([1, 0])]);
    expect(errorOf(() => decodeBinaryData('x', 'BYTES', [2], body)).message).toBe("input 'x': BYTES element 1 has a truncated 4-byte length prefix");
  });

  it('rejects a BYTES element longer than the bytes left', () => {
    const body = framed('abcdef').subarray(0, 7);
    expect(errorOf(() => decodeBinaryData('x', 'BYTES', [1], body)).message).toBe("input 'x': BYTES element 0 declares 6 bytes but only 3 remain");
  });

  it('requires the BYTES element count the shape gives', () => {
    expect(errorOf(() => decodeBinaryData('x', 'BYTES', [2, 2], framed('a', 'b', 'c'))).message).toBe("input 'x': shape [2,2] needs 4 BYTES elements, binary data has 3");
    expect(errorOf(() => decodeBinaryData('x', 'BYTES', [1], framed('a', 'b'))).message).toBe("input 'x': shape [1] needs 1 BYTES elements, binary data has 2");
  });
});

describe('storage → binary tensor data', () => {
  it.each(FIXED)('encodes %s as its little-endian bytes, as a view', (_datatype, data) => {
    const view = data as Exclude<TensorData, Uint8Array[]>;
    const encoded = encodeBinaryData(view);
    expect(encoded.buffer).toBe(view.buffer);
    expect(encoded.equals(bytesOf(view))).toBe(true);
  });

  it('frames BYTES elements with their lengths', () => {
    const elements = ['ab', '', 'né'].map((s) => new TextEncoder().encode(s));
    expect(encodeBinaryData(elements).equals(framed('ab', '', 'né'))).toBe(true);
    expect(serializeBytesElements([]).byteLength).toBe(0);
  });

  it('round-trips BYTES through encode and decode', () => {
    const elements = ['x', 'yy', ''].map((s) => new TextEncoder().encode(s));
    expect(decodeBinaryData('x', 'BYTES', [3], encodeBinaryData(elements))).toEqual(elements);
  });
});
