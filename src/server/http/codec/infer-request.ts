// The KServe v2 inference request body → InferRequest: a JSON header, optionally followed by
// binary tensor data (Inference-Header-Content-Length gives the header's byte length).

import { ConveyorError, invalidArg } from '../../../errors.js';
import type { InferRequest, Parameters, RequestedOutput } from '../../../contracts/infer.js';
import type { Tensor } from '../../../contracts/tensors.js';
import { isDataType } from '../../../contracts/datatypes.js';
import { decodeBinaryData } from './binary-tensor.js';
import { decodeJsonData, describe } from './json-tensor.js';
import { asCount, decodeParameters, expectObject, optionalString, parseJson } from './json-body.js';

export const HEADER_LENGTH_HEADER = 'inference-header-content-length';

/**
 * The JSON header's byte length from Inference-Header-Content-Length; undefined when absent
 * (the whole body is JSON). 0 marks a raw binary request.
 */
export function parseHeaderLength(value: string | string[] | undefined, bodyLength: number): number | undefined {
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? (value[0] ?? '') : value;
  if (!/^\d+$/.test(text.trim())) {
    throw invalidArg(`Inference-Header-Content-Length must be a non-negative integer, got '${text}'`);
  }
  const length = Number(text.trim());
  if (length > bodyLength) {
    throw invalidArg(`Inference-Header-Content-Length ${length} is larger than the request body (${bodyLength} bytes)`);
  }
  return length;
}

/** Decodes a request whose body is JSON (the first `headerLength` bytes) plus binary data. */
export function decodeInferRequest(model: string, version: string | undefined, body: Buffer, headerLength?: number): InferRequest {
  const jsonEnd = headerLength ?? body.byteLength;
  const header = expectObject(parseJson(body.toString('utf8', 0, jsonEnd)), 'the inference request');
  const binary = body.subarray(jsonEnd);
  if (!Array.isArray(header.inputs)) throw invalidArg("the inference request needs an 'inputs' array");

  let offset = 0;
  const inputs = header.inputs.map((entry: unknown, index: number): Tensor => {
    const { tensor, binaryBytes } = decodeInput(entry, index, binary, offset);
    offset += binaryBytes;
    return tensor;
  });
  if (offset !== binary.byteLength) {
    throw invalidArg(`the request has ${binary.byteLength - offset} bytes of binary data that no input claims`);
  }
  checkUniqueNames(
    inputs.map((t) => t.name),
    'input',
  );
  const outputs = decodeRequestedOutputs(header.outputs);

  const request: InferRequest = {
    model,
    inputs,
    parameters: decodeRequestParameters(header.parameters),
    ...(version ? { version } : {}),
    ...(outputs ? { outputs } : {}),
  };
  const id = optionalString(header, 'id', 'the inference request field');
  return id === undefined ? request : { ...request, id };
}

function decodeInput(entry: unknown, index: number, binary: Buffer, offset: number): { tensor: Tensor; binaryBytes: number } {
  const input = expectObject(entry, `input ${index}`);
  if (typeof input.name !== 'string' || input.name === '') throw invalidArg(`input ${index} needs a non-empty 'name'`);
  const name = input.name;
  if (!isDataType(input.datatype)) throw invalidArg(`input '${name}': unknown datatype ${describe(input.datatype)}`);
  const datatype = input.datatype;
  const shape = decodeShape(name, input.shape);
  const parameters = decodeParameters(input.parameters, `input '${name}'`);
  rejectSharedMemory('input', name, parameters);

  const size = parameters.binary_data_size;
  if (size === undefined) {
    if (input.data === undefined) throw invalidArg(`input '${name}' has neither 'data' nor a binary_data_size parameter`);
    return { tensor: { name, datatype, shape, data: decodeJsonData(name, datatype, shape, input.data) }, binaryBytes: 0 };
  }
  const byteLength = asCount(size);
  if (byteLength === undefined) throw invalidArg(`input '${name}': binary_data_size must be a non-negative integer`);
  if (input.data !== undefined) throw invalidArg(`input '${name}' has both 'data' and a binary_data_size parameter`);
  const left = binary.byteLength - offset;
  if (byteLength > left) {
    throw invalidArg(`input '${name}': binary_data_size ${byteLength} exceeds the ${left} bytes of binary data left`);
  }
  const bytes = binary.subarray(offset, offset + byteLength);
  return { tensor: { name, datatype, shape, data: decodeBinaryData(name, datatype, shape, bytes) }, binaryBytes: byteLength };
}

function decodeShape(name: string, value: unknown): number[] {
  if (!Array.isArray(value)) throw invalidArg(`input '${name}': 'shape' must be an array of non-negative integers`);
  return value.map((dim) => {
    const n = asCount(dim);
    if (n === undefined) throw invalidArg(`input '${name}': 'shape' must be an array of non-negative integers`);
    return n;
  });
}

function rejectSharedMemory(what: 'input' | 'output', name: string, parameters: Parameters): void {
  if (parameters.shared_memory_region !== undefined) {
    throw new ConveyorError('UNSUPPORTED', `${what} '${name}': shared memory is not supported`);
  }
}

function decodeRequestedOutputs(value: unknown): RequestedOutput[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw invalidArg("the inference request field 'outputs' must be an array");
  const outputs = value.map((entry: unknown, index: number): RequestedOutput => {
    const output = expectObject(entry, `requested output ${index}`);
    if (typeof output.name !== 'string' || output.name === '') throw invalidArg(`requested output ${index} needs a non-empty 'name'`);
    const parameters = decodeParameters(output.parameters, `output '${output.name}'`);
    if (parameters.binary_data !== undefined && typeof parameters.binary_data !== 'boolean') {
      throw invalidArg(`output '${output.name}': binary_data must be a boolean`);
    }
    const k = parameters.classification === undefined ? 1 : asCount(parameters.classification);
    if (k === undefined || k === 0) {
      throw invalidArg(`output '${output.name}': classification must be a positive integer`);
    }
    rejectSharedMemory('output', output.name, parameters);
    return { name: output.name, parameters };
  });
  checkUniqueNames(
    outputs.map((o) => o.name),
    'output',
  );
  return outputs;
}

// Reserved request parameters (Triton's parameters extension) with the types they must have.
const NON_NEGATIVE_INTEGER = ['priority', 'timeout'];
const BOOLEAN = ['binary_data_output', 'sequence_start', 'sequence_end'];

function decodeRequestParameters(value: unknown): Parameters {
  const parameters = decodeParameters(value, 'the inference request');
  for (const key of NON_NEGATIVE_INTEGER) {
    if (parameters[key] !== undefined && asCount(parameters[key]) === undefined) {
      throw invalidArg(`request parameter '${key}' must be a non-negative integer`);
    }
  }
  for (const key of BOOLEAN) {
    if (parameters[key] !== undefined && typeof parameters[key] !== 'boolean') {
      throw invalidArg(`request parameter '${key}' must be a boolean`);
    }
  }
  return parameters;
}

function checkUniqueNames(names: readonly string[], what: string): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw invalidArg(`${what} '${name}' appears more than once in the request`);
    seen.add(name);
  }
}
