// Tensors as every layer of the server sees them: KServe v2 datatypes, row-major data.

/** KServe v2 / Triton wire datatypes. */
export type DataType = 'BOOL' | 'UINT8' | 'UINT16' | 'UINT32' | 'UINT64' | 'INT8' | 'INT16' | 'INT32' | 'INT64' | 'FP16' | 'FP32' | 'FP64' | 'BF16' | 'BYTES';

/**
 * Element storage per datatype: BOOL → Uint8Array (0/1), FP16 and BF16 → Uint16Array (bit
 * patterns), INT64/UINT64 → BigInt64Array/BigUint64Array, BYTES → one Uint8Array per element.
 * Typed arrays may be views into a larger buffer (a request body); copy before transferring.
 */
export type TensorData = Uint8Array | Uint16Array | Uint32Array | BigUint64Array | Int8Array | Int16Array | Int32Array | BigInt64Array | Float32Array | Float64Array | Uint8Array[];

export interface Tensor {
  readonly name: string;
  readonly datatype: DataType;
  /** Full shape including the batch dimension when the model batches. */
  readonly shape: readonly number[];
  readonly data: TensorData;
}

/** Bytes per element; BYTES is variable (undefined). */
export type ElementSize = Partial<Record<DataType, number>>;

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
