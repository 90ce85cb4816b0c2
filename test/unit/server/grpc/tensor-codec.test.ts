import { describe, expect, it } from 'vitest';
import type { DataType, TensorData } from '../../../../src/contracts/tensors.js';
import { ConveyorError } from '../../../../src/errors.js';
import { CONTENTS_FIELD, dataFromContents, dataFromRaw, decodeBytesElements, encodeBytesElements, parseShape, tensorToRaw } from '../../../../src/server/grpc/tensor-codec.js';

const text = (s: string) => new TextEncoder().encode(s);

/** Per datatype: values as the wire's contents field carries them, and the expected typed data. */
const CASES: { datatype: DataType; wire: unknown[] | null; data: TensorData }[] = [
  { datatype: 'BOOL', wire: [true, false, true], data: Uint8Array.from([1, 0, 1]) },
  { datatype: 'UINT8', wire: [0, 128, 255], data: Uint8Array.from([0, 128, 255]) },
  { datatype: 'UINT16', wire: [0, 1000, 65535], data: Uint16Array.from([0, 1000, 65535]) },
  { datatype: 'UINT32', wire: [0, 70000, 4294967295], data: Uint32Array.from([0, 70000, 4294967295]) },
  { datatype: 'UINT64', wire: ['0', '5', '18446744073709551615'], data: BigUint64Array.from([0n, 5n, 18446744073709551615n]) },
  { datatype: 'INT8', wire: [-128, 0, 127], data: Int8Array.from([-128, 0, 127]) },
  { datatype: 'INT16', wire: [-32768, 7, 32767], data: Int16Array.from([-32768, 7, 32767]) },
  { datatype: 'INT32', wire: [-2147483648, 7, 2147483647], data: Int32Array.from([-2147483648, 7, 2147483647]) },
  { datatype: 'INT64', wire: ['-9223372036854775808', '9007199254740993', 3], data: BigInt64Array.from([-9223372036854775808n, 9007199254740993n, 3n]) },
  { datatype: 'FP32', wire: [1.5, -2, 0.25], data: Float32Array.from([1.5, -2, 0.25]) },
  { datatype: 'FP64', wire: [1e300, -0.1, 3], data: Float64Array.from([1e300, -0.1, 3]) },
  { datatype: 'BYTES', wire: [text('a'), text(''), text('héllo')], data: [text('a'), text(''), text('héllo')] },
  { datatype: 'FP16', wire: null, data: Uint16Array.from([0x3c00, 0xc000, 0x3400]) },
  { datatype: 'BF16', wire: null, data: Uint16Array.from([0x3f80, 0xc000, 0x3e80]) },
];

function expectInvalid(fn: () => unknown, message: RegExp): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConveyorError);
  expect((thrown as ConveyorError).code).toBe('INVALID_ARG');
  expect((thrown as ConveyorError).message).toMatch(message);
}

const plain = (data: TensorData) => (Array.isArray(data) ? data.map((e) => [...e]) : Array.from(data as ArrayLike<number | bigint>));

describe('typed contents → tensor data', () => {
  it.each(CASES.filter((c) => c.wire !== null))('$datatype', ({ datatype, wire, data }) => {
    const field = CONTENTS_FIELD[datatype]!;
    const decoded = dataFromContents('x', datatype, 3, { [field]: wire });
    expect(decoded.constructor).toBe(data.constructor);
    expect(plain(decoded)).toEqual(plain(data));
  });

  it.each(['FP16', 'BF16'] as const)('%s has no contents field: raw only', (datatype) => {
    expectInvalid(() => dataFromContents('x', datatype, 1, { uint_contents: [0x3c00] }), /can only be sent in raw_input_contents/);
  });

  it('rejects an element count that does not match the shape', () => {
    expectInvalid(() => dataFromContents('x', 'FP32', 4, { fp32_contents: [1, 2, 3] }), /expected 4 elements in contents.fp32_contents, got 3/);
    expectInvalid(() => dataFromContents('x', 'BYTES', 1, { bytes_contents: [text('a'), text('b')] }), /expected 1 elements/);
  });

  it("rejects data in another datatype's field", () => {
    expectInvalid(() => dataFromContents('x', 'FP32', 2, { int_contents: [1, 2] }), /belongs in contents.fp32_contents, not int_contents/);
  });

  it('rejects values outside a narrow integer type', () => {
    expectInvalid(() => dataFromContents('x', 'INT8', 1, { int_contents: [128] }), /out of range for INT8/);
    expectInvalid(() => dataFromContents('x', 'UINT16', 1, { uint_contents: [65536] }), /out of range for UINT16/);
  });
});

describe('raw bytes ↔ tensor data', () => {
  it.each(CASES)('$datatype round-trips', ({ datatype, data }) => {
    const raw = tensorToRaw({ name: 'y', datatype, shape: [3], data });
    const decoded = dataFromRaw('y', datatype, 3, raw);
    expect(decoded.constructor).toBe(data.constructor);
    expect(plain(decoded)).toEqual(plain(data));
  });

  it('writes fixed-size data little-endian as a view of the tensor', () => {
    const data = Float32Array.from([1, -2]);
    const raw = tensorToRaw({ name: 'y', datatype: 'FP32', shape: [2], data });
    expect(raw.buffer).toBe(data.buffer);
    expect([...raw]).toEqual([0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0]);
  });

  it('reads INT64 values beyond 2^53 exactly', () => {
    const raw = new Uint8Array(8);
    new DataView(raw.buffer).setBigInt64(0, 9007199254740993n, true);
    expect([...(dataFromRaw('x', 'INT64', 1, raw) as BigInt64Array)]).toEqual([9007199254740993n]);
  });

  it('views aligned input in place and copies misaligned input', () => {
    const backing = new Uint8Array(13);
    new DataView(backing.buffer).setFloat32(4, 2.5, true);
    new DataView(backing.buffer).setFloat32(9, 7.5, true);
    const aligned = dataFromRaw('x', 'FP32', 1, backing.subarray(4, 8)) as Float32Array;
    const misaligned = dataFromRaw('x', 'FP32', 1, backing.subarray(9, 13)) as Float32Array;
    expect(aligned.buffer).toBe(backing.buffer);
    expect(aligned[0]).toBe(2.5);
    expect(misaligned.buffer).not.toBe(backing.buffer);
    expect(misaligned[0]).toBe(7.5);
  });

  it('rejects raw data whose length does not match the shape', () => {
    expectInvalid(() => dataFromRaw('x', 'FP32', 3, new Uint8Array(11)), /expected 12 bytes of raw FP32 data \(3 elements\), got 11/);
    expectInvalid(() => dataFromRaw('x', 'INT64', 1, new Uint8Array(16)), /expected 8 bytes/);
    expectInvalid(() => dataFromRaw('x', 'FP16', 2, new Uint8Array(2)), /expected 4 bytes/);
  });

  it('rejects output storage that does not match the datatype', () => {
    expect(() => tensorToRaw({ name: 'y', datatype: 'FP32', shape: [1], data: Float64Array.from([1]) })).toThrow(/storage does not match/);
    expect(() => tensorToRaw({ name: 'y', datatype: 'BYTES', shape: [1], data: Uint8Array.from([1]) })).toThrow(/BYTES data/);
  });
});

describe('BYTES raw framing', () => {
  it('prefixes each element with its 4-byte little-endian length', () => {
    expect([...encodeBytesElements([text('ab'), text('')])]).toEqual([2, 0, 0, 0, 0x61, 0x62, 0, 0, 0, 0]);
  });

  it('decodes elements as views of the request bytes', () => {
    const raw = encodeBytesElements([text('xyz'), text('q')]);
    const elements = decodeBytesElements('s', 2, raw);
    expect(elements.map((e) => new TextDecoder().decode(e))).toEqual(['xyz', 'q']);
    expect(elements[0]!.buffer).toBe(raw.buffer);
  });

  it('rejects a truncated length prefix', () => {
    expectInvalid(() => decodeBytesElements('s', 2, Uint8Array.from([1, 0, 0, 0, 0x61, 2, 0])), /ends inside a 4-byte length prefix/);
  });

  it('rejects an element longer than the remaining bytes', () => {
    expectInvalid(() => decodeBytesElements('s', 1, Uint8Array.from([5, 0, 0, 0, 0x61, 0x62])), /claims 5 bytes but only 2 remain/);
  });

  it('rejects an element count that does not match the shape', () => {
    expectInvalid(() => decodeBytesElements('s', 3, encodeBytesElements([text('a'), text('b')])), /expected 3 BYTES elements in raw data, got 2/);
  });
});

describe('shape', () => {
  it('parses int64 strings and numbers', () => {
    expect(parseShape(['2', 3, '0'], 'x')).toEqual([2, 3, 0]);
  });

  it('rejects negative or non-integer dimensions', () => {
    expectInvalid(() => parseShape(['-1'], 'x'), /invalid shape dimension -1/);
    expectInvalid(() => parseShape(['99999999999999999999'], 'x'), /invalid shape dimension/);
  });
});
