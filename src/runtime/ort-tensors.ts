// Conversions between the server's tensors (KServe datatypes) and onnxruntime-node tensors.

import * as ort from 'onnxruntime-node';
import { invalidArg } from '../errors.js';
import { DATATYPES, dataTypeOfOrt, type DataType } from '../contracts/datatypes.js';
import type { Tensor, TensorData } from '../contracts/tensors.js';

export function dataTypeOf(type: string): DataType {
  const datatype = dataTypeOfOrt(type);
  if (!datatype) throw new Error(`onnxruntime type ${type} has no KServe datatype`);
  return datatype;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export function toOrt(tensor: Tensor): ort.Tensor {
  const type = DATATYPES[tensor.datatype].ort;
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
