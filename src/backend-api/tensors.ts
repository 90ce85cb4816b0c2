// Tensor helpers for TypeScript model authors: build an output from plain values (numbers,
// bigints, strings) or a typed array, and read an input as numbers or strings. Tensors are the
// server's own (src/contracts/tensors.ts) and datatypes its one table (datatypes.ts).

import { DATATYPES, isDataType, storageOf, type DataType, type FixedDataType } from '../contracts/datatypes.js';
import { elementCount, type Tensor, type TensorData } from '../contracts/tensors.js';

export type { DataType, Tensor, TensorData };

/** What tensor() takes as data: the datatype's own storage, or plain values it is converted from. */
export type TensorValues = TensorData | ArrayLike<number> | ArrayLike<bigint> | readonly (string | Uint8Array)[];

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One BYTES element: strings are UTF-8 encoded. */
function bytesElement(value: unknown, name: string): Uint8Array {
  if (typeof value === 'string') return encoder.encode(value);
  if (value instanceof Uint8Array) return value;
  throw new TypeError(`tensor '${name}': BYTES elements are strings or Uint8Arrays, got ${typeof value}`);
}

function fixedData(datatype: FixedDataType, values: ArrayLike<unknown>, name: string): Exclude<TensorData, Uint8Array[]> {
  const Storage = storageOf(datatype);
  if (values instanceof Storage) return values as Exclude<TensorData, Uint8Array[]>;
  const wide = Storage === BigInt64Array || Storage === BigUint64Array;
  const out = new Storage(values.length);
  for (let i = 0; i < values.length; i += 1) {
    const v = values[i];
    if (wide) {
      if (typeof v !== 'bigint' && !Number.isInteger(v)) throw new TypeError(`tensor '${name}': ${datatype} element ${i} is not an integer`);
      (out as BigInt64Array)[i] = BigInt(v as number | bigint);
    } else {
      if (typeof v !== 'number' && typeof v !== 'boolean') throw new TypeError(`tensor '${name}': ${datatype} element ${i} is not a number`);
      (out as Float32Array)[i] = Number(v);
    }
  }
  return out;
}

/**
 * A tensor of `datatype` and `shape` from `values`: the datatype's typed array as it is, or plain
 * values converted (numbers / bigints, booleans for BOOL, strings or bytes for BYTES). Throws a
 * TypeError naming the tensor when the values do not fit.
 */
export function tensor(name: string, datatype: DataType, shape: readonly number[], values: TensorValues): Tensor {
  if (!isDataType(datatype)) throw new TypeError(`tensor '${name}': unknown datatype '${String(datatype)}' (one of ${Object.keys(DATATYPES).join(', ')})`);
  const data: TensorData = datatype === 'BYTES' ? Array.from(values as ArrayLike<unknown>, (v) => bytesElement(v, name)) : fixedData(datatype, values as ArrayLike<unknown>, name);
  if (data.length !== elementCount(shape)) {
    throw new TypeError(`tensor '${name}': ${data.length} elements for shape [${shape.join(',')}] (${elementCount(shape)} expected)`);
  }
  return { name, datatype, shape: [...shape], data };
}

/** An FP32 tensor: the common output of a pre- or post-processing step. */
export const fp32 = (name: string, shape: readonly number[], values: Float32Array | ArrayLike<number>): Tensor => tensor(name, 'FP32', shape, values);

/** A BYTES tensor of strings (UTF-8) or raw bytes. */
export const bytes = (name: string, shape: readonly number[], values: readonly (string | Uint8Array)[]): Tensor => tensor(name, 'BYTES', shape, values);

/** A BYTES tensor's elements decoded as UTF-8 strings, row-major. */
export function asStrings(t: Tensor): string[] {
  if (!Array.isArray(t.data)) throw new TypeError(`tensor '${t.name}' is ${t.datatype}, not BYTES`);
  return t.data.map((element) => decoder.decode(element));
}

/** A fixed-width tensor's elements as numbers (64-bit integers converted, exact up to 2^53). */
export function asNumbers(t: Tensor): number[] {
  if (Array.isArray(t.data)) throw new TypeError(`tensor '${t.name}' is BYTES, not numeric: read it with asStrings`);
  return Array.from(t.data as ArrayLike<number | bigint>, Number);
}

/** Whether a value is shaped like a tensor (its data is checked when it is sent). */
export function isTensor(value: unknown): value is Tensor {
  const t = value as Partial<Tensor> | null;
  return typeof t === 'object' && t !== null && typeof t.name === 'string' && isDataType(t.datatype) && Array.isArray(t.shape) && t.data !== undefined;
}
