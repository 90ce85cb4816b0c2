import { describe, expect, it } from 'vitest';
import type { DataType, Tensor, TensorData } from '../../../src/contracts/tensors.js';
import { itemSignature, splitOutputs, stackInputs } from '../../../src/batcher/stack.js';
import { storageOf } from '../../../src/contracts/datatypes.js';

const ALL_TYPES: readonly DataType[] = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BF16', 'BYTES'];

/** Distinct, type-appropriate values so a misplaced row shows up. */
function values(datatype: DataType, count: number, seed: number): TensorData {
  const ints = Array.from({ length: count }, (_, i) => (seed * 31 + i * 7) % 100);
  switch (datatype) {
    case 'BYTES':
      return ints.map((v) => new TextEncoder().encode(`s${v}-${'x'.repeat(v % 4)}`));
    case 'BOOL':
      return Uint8Array.from(ints, (v) => v % 2);
    case 'INT8':
      return Int8Array.from(ints, (v) => v - 50);
    case 'INT64':
      return BigInt64Array.from(ints, (v) => BigInt(v) - 2n ** 40n);
    case 'UINT64':
      return BigUint64Array.from(ints, (v) => BigInt(v) + 2n ** 60n);
    case 'FP16':
    case 'BF16':
      return Uint16Array.from(ints, (v) => 0x3c00 + v); // bit patterns, never converted
    case 'FP32':
      return Float32Array.from(ints, (v) => v / 8 - 3);
    case 'FP64':
      return Float64Array.from(ints, (v) => v / 3);
    case 'UINT16':
      return Uint16Array.from(ints);
    case 'UINT32':
      return Uint32Array.from(ints, (v) => v + 2 ** 31);
    case 'INT16':
      return Int16Array.from(ints, (v) => -v);
    case 'INT32':
      return Int32Array.from(ints, (v) => v - 2 ** 30);
    default:
      return Uint8Array.from(ints);
  }
}

function tensor(name: string, datatype: DataType, shape: number[], seed: number): Tensor {
  return {
    name,
    datatype,
    shape,
    data: values(
      datatype,
      shape.reduce((n, d) => n * d, 1),
      seed,
    ),
  };
}

const plain = (data: TensorData): unknown[] => (Array.isArray(data) ? data.map((b) => Array.from(b)) : Array.from(data as ArrayLike<unknown>));

describe('stackInputs / splitOutputs round trip', () => {
  for (const datatype of ALL_TYPES) {
    it(`${datatype}: stacks rows in request order and splits them back`, () => {
      const rows = [2, 1, 0, 3];
      const requests = rows.map((n, i) => [tensor('x', datatype, [n, 2, 3], i + 1)]);
      const [stacked] = stackInputs(requests);
      expect(stacked!.shape).toEqual([6, 2, 3]);
      expect(stacked!.datatype).toBe(datatype);
      if (datatype !== 'BYTES') expect(stacked!.data).toBeInstanceOf(storageOf(datatype));
      expect(plain(stacked!.data)).toEqual(requests.flatMap((r) => plain(r[0]!.data)));

      const back = splitOutputs([stacked!], rows);
      expect(back).toHaveLength(rows.length);
      back.forEach((outputs, i) => {
        expect(outputs[0]!.shape).toEqual([rows[i], 2, 3]);
        expect(plain(outputs[0]!.data)).toEqual(plain(requests[i]![0]!.data));
      });
    });
  }

  it('stacks every input, matched by name, in the first request’s order', () => {
    const r1 = [tensor('ids', 'INT64', [1, 4], 1), tensor('mask', 'INT64', [1, 4], 2)];
    const r2 = [tensor('mask', 'INT64', [2, 4], 3), tensor('ids', 'INT64', [2, 4], 4)];
    const stacked = stackInputs([r1, r2]);
    expect(stacked.map((t) => [t.name, t.shape])).toEqual([
      ['ids', [3, 4]],
      ['mask', [3, 4]],
    ]);
    expect(plain(stacked[1]!.data)).toEqual([...plain(r1[1]!.data), ...plain(r2[0]!.data)]);
  });

  it('stacks 1-D inputs (one scalar per item)', () => {
    const stacked = stackInputs([[tensor('s', 'FP32', [1], 1)], [tensor('s', 'FP32', [2], 2)]]);
    expect(stacked[0]!.shape).toEqual([3]);
    expect(splitOutputs(stacked, [1, 2]).map((o) => o[0]!.shape)).toEqual([[1], [2]]);
  });

  it('copies when stacking and shares the buffer when splitting', () => {
    const a = tensor('x', 'FP32', [1, 2], 1);
    const [stacked] = stackInputs([[a], [tensor('x', 'FP32', [1, 2], 2)]]);
    expect((stacked!.data as Float32Array).buffer).not.toBe((a.data as Float32Array).buffer);
    const [first] = splitOutputs([stacked!], [1, 1]);
    expect((first![0]!.data as Float32Array).buffer).toBe((stacked!.data as Float32Array).buffer);
  });
});

describe('stackInputs / splitOutputs: refusals', () => {
  it('refuses unequal item shapes, datatypes, a missing input, or data of the wrong storage', () => {
    expect(() => stackInputs([[tensor('x', 'FP32', [1, 2], 1)], [tensor('x', 'FP32', [1, 3], 2)]])).toThrow(/cannot be stacked/);
    expect(() => stackInputs([[tensor('x', 'FP32', [1, 2], 1)], [tensor('x', 'FP64', [1, 2], 2)]])).toThrow(/cannot be stacked/);
    expect(() => stackInputs([[tensor('x', 'FP32', [1, 2], 1)], [tensor('y', 'FP32', [1, 2], 2)]])).toThrow(/missing/);
    const wrong: Tensor = { name: 'x', datatype: 'FP16', shape: [1, 2], data: new Float32Array(2) };
    expect(() => stackInputs([[wrong], [wrong]])).toThrow(/Uint16Array/);
    const short: Tensor = { name: 'x', datatype: 'FP32', shape: [1, 3], data: new Float32Array(2) };
    expect(() => stackInputs([[short], [short]])).toThrow(/2 elements/);
  });

  it('refuses to split an output whose first dimension is not the batch', () => {
    expect(() => splitOutputs([tensor('y', 'FP32', [4, 2], 1)], [2, 1])).toThrow(/expected 3 rows/);
    expect(() => splitOutputs([{ name: 'y', datatype: 'FP32', shape: [], data: new Float32Array(1) }], [1])).toThrow(/batch dimension/);
  });
});

describe('itemSignature', () => {
  it('ignores the batch dimension and input order, and sees every other dimension', () => {
    const a = itemSignature([tensor('x', 'FP32', [1, 5], 1), tensor('m', 'INT64', [1, 5], 1)]);
    const b = itemSignature([tensor('m', 'INT64', [3, 5], 2), tensor('x', 'FP32', [3, 5], 2)]);
    expect(a).toBe(b);
    expect(itemSignature([tensor('x', 'FP32', [1, 6], 1), tensor('m', 'INT64', [1, 5], 1)])).not.toBe(a);
    expect(itemSignature([tensor('x', 'FP32', [1, 5], 1)])).not.toBe(a);
  });

  it('compares the values of shape tensors', () => {
    const shapeTensors = new Set(['shape']);
    const s = (values: number[]): string => itemSignature([{ name: 'shape', datatype: 'INT32', shape: [1, 2], data: Int32Array.from(values) }], shapeTensors);
    expect(s([2, 3])).toBe(s([2, 3]));
    expect(s([2, 3])).not.toBe(s([3, 2]));
  });
});
