// Datatype facts the HTTP codec needs: byte widths and the typed array each datatype lives in
// (the storage rules of src/contracts/tensors.ts).

import { invalidArg } from '../../../errors.js';
import type { ConfigDataType } from '../../../contracts/model-config.js';
import type { DataType, TensorData } from '../../../contracts/tensors.js';

type FixedDataType = Exclude<DataType, 'BYTES'>;

type TypedArrayConstructor =
  | Uint8ArrayConstructor
  | Uint16ArrayConstructor
  | Uint32ArrayConstructor
  | BigUint64ArrayConstructor
  | Int8ArrayConstructor
  | Int16ArrayConstructor
  | Int32ArrayConstructor
  | BigInt64ArrayConstructor
  | Float32ArrayConstructor
  | Float64ArrayConstructor;

export type FixedTensorData = Exclude<TensorData, Uint8Array[]>;

const STORAGE: Readonly<Record<FixedDataType, TypedArrayConstructor>> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array,
  FP16: Uint16Array,
  FP32: Float32Array,
  FP64: Float64Array,
  BF16: Uint16Array,
};

export function isDataType(value: unknown): value is DataType {
  return typeof value === 'string' && (value === 'BYTES' || Object.hasOwn(STORAGE, value));
}

/** Bytes per element of a fixed-width datatype. */
export function elementSize(datatype: FixedDataType): number {
  return STORAGE[datatype].BYTES_PER_ELEMENT;
}

export function storageFor(datatype: FixedDataType): TypedArrayConstructor {
  return STORAGE[datatype];
}

/** Product of the dimensions (1 for a scalar shape; 0 when any is 0, even beside huge ones). */
export function elementCount(shape: readonly number[]): number {
  // Without this, [2^53, 2^53, …, 0] overflows to Infinity first and Infinity · 0 is NaN.
  if (shape.includes(0)) return 0;
  let count = 1;
  for (const dim of shape) count *= dim;
  return count;
}

export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

/** config.pbtxt's TYPE_* name as the wire datatype (TYPE_STRING travels as BYTES). */
export function fromConfigDataType(type: ConfigDataType): DataType {
  if (type === 'TYPE_STRING') return 'BYTES';
  const name = type.slice('TYPE_'.length);
  if (!isDataType(name)) throw invalidArg(`model input datatype ${type} cannot be sent over HTTP`);
  return name;
}
