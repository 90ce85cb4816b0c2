// Raw binary requests (Inference-Header-Content-Length: 0): the body is the bytes of the
// model's single input, with no JSON header. Datatype and shape come from the model config;
// the request is batch-1 and every output comes back binary.

import { invalidArg } from '../../../errors.js';
import type { InferRequest } from '../../../contracts/infer.js';
import type { ModelConfig } from '../../../contracts/model-config.js';
import type { DataType, Tensor } from '../../../contracts/tensors.js';
import { decodeBinaryData } from './binary-tensor.js';
import { elementSize } from '../../../contracts/datatypes.js';
import { formatShape, fromConfigDataType } from './datatypes.js';

export function decodeRawInferRequest(model: string, version: string | undefined, config: ModelConfig, body: Buffer): InferRequest {
  const [input, ...others] = config.input;
  if (input === undefined || others.length > 0) {
    throw invalidArg(`a raw binary request (Inference-Header-Content-Length: 0) needs a model with exactly one input; '${model}' has ${config.input.length}`);
  }
  const datatype = fromConfigDataType(input.data_type);
  const batch = config.max_batch_size > 0 ? [1] : [];
  const tensor: Tensor = datatype === 'BYTES' ? rawBytesInput(input.name, input.dims, batch, body) : rawFixedInput(input.name, datatype, input.dims, batch, body);
  return {
    model,
    ...(version ? { version } : {}),
    parameters: { binary_data_output: true },
    inputs: [tensor],
  };
}

// The body is one BYTES element without the length prefix: there is nothing else to frame.
function rawBytesInput(name: string, dims: readonly number[], batch: number[], body: Buffer): Tensor {
  if (dims.length !== 1 || (dims[0] !== 1 && dims[0] !== -1)) {
    throw invalidArg(`a raw binary request for BYTES input '${name}' needs dims [1], the model has ${formatShape(dims)}`);
  }
  return { name, datatype: 'BYTES', shape: [...batch, 1], data: [new Uint8Array(body.buffer, body.byteOffset, body.byteLength)] };
}

function rawFixedInput(name: string, datatype: Exclude<DataType, 'BYTES'>, dims: readonly number[], batch: number[], body: Buffer): Tensor {
  const variable = dims.filter((d) => d < 0).length;
  if (variable > 1) {
    throw invalidArg(`a raw binary request for input '${name}' allows at most one variable dimension, the model has ${formatShape(dims)}`);
  }
  const fixedBytes = dims.reduce((bytes, d) => (d < 0 ? bytes : bytes * d), elementSize(datatype));
  const fits = variable === 1 ? fixedBytes === 0 || body.byteLength % fixedBytes === 0 : body.byteLength === fixedBytes;
  if (!fits) {
    throw invalidArg(`raw binary input '${name}': ${body.byteLength} bytes do not fit shape ${formatShape(dims)} of ${datatype}`);
  }
  const inferred = variable === 1 && fixedBytes > 0 ? body.byteLength / fixedBytes : 0;
  const shape = [...batch, ...dims.map((d) => (d < 0 ? inferred : d))];
  return { name, datatype, shape, data: decodeBinaryData(name, datatype, shape, body) };
}
