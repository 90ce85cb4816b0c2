// Tensors as every layer of the server sees them: KServe v2 datatypes, row-major data.

import type { DataType } from './datatypes.js';

/** KServe v2 / Triton wire datatypes (declared with their facts in datatypes.ts). */
export type { DataType };

/**
 * Element storage per datatype (DATATYPES' `storage`): BOOL → Uint8Array (0/1), FP16 and BF16 →
 * Uint16Array (bit patterns), INT64/UINT64 → BigInt64Array/BigUint64Array, BYTES → one Uint8Array
 * per element.
 * Typed arrays may be views into a larger buffer (a request body); copy before transferring.
 */
export type TensorData = Uint8Array | Uint16Array | Uint32Array | BigUint64Array | Int8Array | Int16Array | Int32Array | BigInt64Array | Float32Array | Float64Array | Uint8Array[];

/** The data of a fixed-width datatype: one typed array. */
export type FixedTensorData = Exclude<TensorData, Uint8Array[]>;

export interface Tensor {
  readonly name: string;
  readonly datatype: DataType;
  /** Full shape including the batch dimension when the model batches. */
  readonly shape: readonly number[];
  readonly data: TensorData;
}

/** Product of the dimensions (1 for a scalar shape; 0 when any is 0, even beside huge ones). */
export function elementCount(shape: readonly number[]): number {
  // Without this, [2^53, 2^53, …, 0] overflows to Infinity first and Infinity · 0 is NaN.
  if (shape.includes(0)) return 0;
  let count = 1;
  for (const dim of shape) count *= dim;
  return count;
}

/** The ArrayBuffers to transfer with a postMessage of these tensors. */
export function transferList(tensors: readonly Tensor[]): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  for (const t of tensors) {
    if (Array.isArray(t.data)) continue; // BYTES: many small arrays, cloned
    buffers.add((t.data as Float32Array).buffer as ArrayBuffer);
  }
  return [...buffers];
}

/** A tensor whose data owns its whole buffer (a request-body view would drag the body along). */
export function detached(tensor: Tensor): Tensor {
  if (Array.isArray(tensor.data)) return tensor;
  const data = tensor.data as Float32Array;
  if (data.byteOffset === 0 && data.byteLength === data.buffer.byteLength) return tensor;
  return { ...tensor, data: data.slice() };
}
