// ModelInferRequest → InferRequest and InferResponse → ModelInferResponse. Pure functions over
// the proto-loader object shapes (wire-types.ts), so every wire rule is unit-tested without a
// socket. Inputs may come as typed `contents` or as `raw_input_contents`, never both; outputs
// always go out as `raw_output_contents`, the only place tritonclient reads them from.

import type { InferRequest, InferResponse, Parameters, ParameterValue, RequestedOutput } from '../../contracts/infer.js';
import { elementCount, type Tensor } from '../../contracts/tensors.js';
import { ConveyorError, invalidArg } from '../../errors.js';
import { isDataType } from '../../contracts/datatypes.js';
import { dataFromContents, dataFromRaw, parseShape, populatedContentsFields, tensorToRaw } from './tensor-codec.js';
import type { WireInferParameter, WireInferRequest, WireInferResponse, WireInputTensor, WireLong, WireParameters } from './wire-types.js';
import { setOwnEntry } from '../../contracts/own-entry.js';

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/** A decoded 64-bit integer: a number when exact, otherwise a bigint. */
function longValue(value: WireLong): number | bigint {
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : BigInt(value);
}

function parameterFromWire(parameter: WireInferParameter): ParameterValue | undefined {
  switch (parameter.parameter_choice) {
    case 'bool_param':
      return parameter.bool_param;
    case 'string_param':
      return parameter.string_param;
    case 'double_param':
      return parameter.double_param;
    case 'int64_param':
      return parameter.int64_param === undefined ? undefined : longValue(parameter.int64_param);
    case 'uint64_param':
      return parameter.uint64_param === undefined ? undefined : longValue(parameter.uint64_param);
    default:
      return undefined; // an InferParameter with no member set carries nothing
  }
}

export function parametersFromWire(wire: WireParameters | undefined): Parameters {
  const out: Record<string, ParameterValue> = {};
  for (const [key, parameter] of Object.entries(wire ?? {})) {
    const value = parameterFromWire(parameter);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

function parameterToWire(value: ParameterValue): WireInferParameter {
  if (typeof value === 'boolean') return { bool_param: value };
  if (typeof value === 'string') return { string_param: value };
  if (typeof value === 'bigint') {
    if (value > INT64_MAX) return { uint64_param: value.toString() };
    if (value < INT64_MIN) throw new Error(`parameter value ${value} does not fit in int64`);
    return { int64_param: value.toString() };
  }
  // JS cannot tell 1 from 1.0: integral numbers go as int64, which is what Triton clients send.
  return Number.isSafeInteger(value) ? { int64_param: value } : { double_param: value };
}

export function parametersToWire(parameters: Parameters | undefined): WireParameters {
  const out: WireParameters = {};
  for (const [key, value] of Object.entries(parameters ?? {})) setOwnEntry(out, key, parameterToWire(value));
  return out;
}

function inputFromWire(input: WireInputTensor, raw: Uint8Array | undefined): Tensor {
  const { name } = input;
  if (!isDataType(input.datatype)) throw invalidArg(`input '${name}': unknown datatype '${input.datatype}'`);
  if (input.parameters?.['shared_memory_region'] !== undefined) {
    throw new ConveyorError('UNSUPPORTED', `input '${name}': shared memory is not supported; send the data in the request`);
  }
  const shape = parseShape(input.shape, name);
  const count = elementCount(shape);
  if (raw !== undefined) return { name, datatype: input.datatype, shape, data: dataFromRaw(name, input.datatype, count, raw) };
  if (populatedContentsFields(input.contents).length === 0) {
    // An empty tensor needs no data in any form; anything else must bring some.
    if (count === 0) return { name, datatype: input.datatype, shape, data: dataFromRaw(name, input.datatype, 0, new Uint8Array(0)) };
    throw invalidArg(`input '${name}': no data; set contents or raw_input_contents`);
  }
  return { name, datatype: input.datatype, shape, data: dataFromContents(name, input.datatype, count, input.contents ?? {}) };
}

/** Raw entries for the inputs, or undefined when the request uses typed contents. */
function rawInputs(request: WireInferRequest): readonly Uint8Array[] | undefined {
  const raw = request.raw_input_contents ?? [];
  if (raw.length === 0) return undefined;
  if (raw.length !== request.inputs.length) {
    throw invalidArg(`raw_input_contents has ${raw.length} entries but the request has ${request.inputs.length} inputs; send one per input, in order`);
  }
  const mixed = request.inputs.find((input) => populatedContentsFields(input.contents).length > 0);
  if (mixed) throw invalidArg(`input '${mixed.name}' sets contents while the request uses raw_input_contents; use one form for all inputs`);
  return raw;
}

export function inferRequestFromWire(request: WireInferRequest): InferRequest {
  const raw = rawInputs(request);
  const inputs = request.inputs.map((input, i) => inputFromWire(input, raw?.[i]));
  const outputs: RequestedOutput[] = (request.outputs ?? []).map((o) => ({ name: o.name, parameters: parametersFromWire(o.parameters) }));
  return {
    model: request.model_name,
    ...(request.model_version ? { version: request.model_version } : {}),
    ...(request.id ? { id: request.id } : {}),
    parameters: parametersFromWire(request.parameters),
    inputs,
    ...(outputs.length > 0 ? { outputs } : {}),
  };
}

/**
 * InferResponse → ModelInferResponse with every output in raw_output_contents. `extra` adds
 * response parameters the front end owns (ModelStreamInfer's triton_final_response).
 */
export function inferResponseToWire(response: InferResponse, extra?: Parameters): WireInferResponse {
  return {
    model_name: response.model,
    model_version: response.version,
    id: response.id ?? '',
    parameters: parametersToWire({ ...response.parameters, ...extra }),
    outputs: response.outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: [...t.shape], parameters: {} })),
    raw_output_contents: response.outputs.map(tensorToRaw),
  };
}
