// Conversions between the server's tensors (KServe datatypes) and onnxruntime-node tensors.

import * as ort from 'onnxruntime-node';
import { invalidArg } from '../errors.js';
import type { DataType, Tensor, TensorData } from '../contracts/tensors.js';
import type { OrtElementType } from '../contracts/worker-messages.js';

const TO_ORT: Record<DataType, OrtElementType> = {
  BOOL: 'bool',
  UINT8: 'uint8',
  UINT16: 'uint16',
  UINT32: 'uint32',
  UINT64: 'uint64',
  INT8: 'int8',
  INT16: 'int16',
  INT32: 'int32',
  INT64: 'int64',
  FP16: 'float16',
  FP32: 'float32',
  FP64: 'float64',
  BF16: 'bfloat16',
  BYTES: 'string',
};

const FROM_ORT = Object.fromEntries(Object.entries(TO_ORT).map(([k, v]) => [v, k])) as Record<OrtElementType, DataType>;

export function ortTypeOf(datatype: DataType): OrtElementType {
  return TO_ORT[datatype];
}

export function dataTypeOf(type: string): DataType {
  const datatype = FROM_ORT[type as OrtElementType];
  if (!datatype) throw new Error(`onnxruntime type ${type} has no KServe datatype`);
  return datatype;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export function toOrt(tensor: Tensor): ort.Tensor {
  const type = TO_ORT[tensor.datatype];
  if (type === 'string') {
    return new ort.Tensor(
      'string',
      (tensor.data as Uint8Array[]).map((bytes) => decoder.decode(bytes)),
      [...tensor.shape],
    );
  }
  if (type === 'bfloat16') throw invalidArg('BF16 tensors are not supported by the ONNX Runtime CPU backend');
  // BOOL travels as 0/1 bytes; ORT's bool tensors take a Uint8Array.
  return new ort.Tensor(type as 'float32', tensor.data as Float32Array, [...tensor.shape]);
}

/** Copies an ORT output into a fresh, transferable buffer. */
export function fromOrt(name: string, value: ort.Tensor): Tensor {
  const datatype = dataTypeOf(value.type);
  const shape = [...value.dims];
  if (datatype === 'BYTES') return { name, datatype, shape, data: (value.data as string[]).map((s) => encoder.encode(s)) };
  const source = value.data as Exclude<TensorData, Uint8Array[]>;
  const copy = new (source.constructor as new (n: number) => typeof source)(source.length);
  (copy as Float32Array).set(source as Float32Array);
  return { name, datatype, shape, data: copy };
}
