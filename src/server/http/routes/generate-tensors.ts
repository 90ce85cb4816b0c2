// Triton's generate extension for models that are not LLMs (a TypeScript model, decoupled or not;
// an ensemble streaming from its decoupled step): the body's keys are the model's inputs by name,
// each value a JSON scalar or array laid into the input's config shape (a -1 dimension takes the
// value's length; a batching model gets a batch of one); `parameters` are the request's. Each
// response is {"model_name", "model_version", "id"?, …each output by name}: a one-element output
// as its value (BYTES as text), a longer one as a flat array.

import type { InferenceService } from '../../../contracts/inference-service.js';
import type { InferRequest, InferResponse, InferStreamEvent, ParameterValue } from '../../../contracts/infer.js';
import type { ModelConfig, ModelTensorConfig } from '../../../contracts/model-config.js';
import { elementCount, type Tensor } from '../../../contracts/tensors.js';
import { ConveyorError, invalidArg } from '../../../errors.js';
import { isObject } from '../../kit/body.js';
import { dataTypeOfConfig } from '../../../contracts/datatypes.js';
import { decodeJsonData } from '../codec/json-tensor.js';
import { setOwnEntry } from '../../../contracts/own-entry.js';

/** The body as an inference request on `model`, its inputs shaped by the model's config. */
export function tensorRequestFromBody(config: ModelConfig, ref: { model: string; version?: string }, body: Readonly<Record<string, unknown>>): InferRequest {
  const { id, parameters, ...rest } = body;
  if (id !== undefined && typeof id !== 'string') throw invalidArg('id must be a string', 'id');
  if (parameters !== undefined && !isObject(parameters)) throw invalidArg('parameters must be a JSON object', 'parameters');
  const declared = new Map(config.input.map((t) => [t.name, t]));
  const inputs = Object.entries(rest).map(([key, value]) => {
    const input = declared.get(key);
    if (input === undefined) throw invalidArg(`unexpected key '${key}': not an input of model '${config.name}' (${config.input.map((t) => t.name).join(', ')})`, key);
    return inputTensor(config, input, value);
  });
  return { ...ref, ...(id !== undefined ? { id } : {}), parameters: requestParameters(parameters ?? {}), inputs };
}

function inputTensor(config: ModelConfig, input: ModelTensorConfig, value: unknown): Tensor {
  const values = Array.isArray(value) ? value.flat(Number.POSITIVE_INFINITY) : [value];
  const known = input.dims.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
  const dims = input.dims.map((d) => (d === -1 ? Math.max(1, Math.round(values.length / known)) : d));
  const shape = config.max_batch_size > 0 ? [1, ...dims] : dims;
  if (elementCount(shape) !== values.length) throw invalidArg(`input '${input.name}': its config shape [${input.dims.join(', ')}] does not take ${values.length} value(s)`, input.name);
  const datatype = dataTypeOfConfig(input.data_type);
  if (datatype === undefined) throw invalidArg(`input '${input.name}': data type ${input.data_type} cannot come from JSON`, input.name);
  return { name: input.name, datatype, shape, data: decodeJsonData(input.name, datatype, shape, values) };
}

/** Generate parameters are JSON values; a request parameter is a string, number or boolean (objects travel as JSON text). */
function requestParameters(parameters: Readonly<Record<string, unknown>>): Record<string, ParameterValue> {
  const out: Record<string, ParameterValue> = {};
  for (const [key, value] of Object.entries(parameters)) {
    setOwnEntry(out, key, typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : JSON.stringify(value));
  }
  return out;
}

export function tensorResponseJson(response: InferResponse): Record<string, unknown> {
  const body: Record<string, unknown> = { model_name: response.model, model_version: response.version };
  if (response.id !== undefined) body['id'] = response.id;
  for (const output of response.outputs) {
    const values = Array.isArray(output.data) ? output.data.map((b) => Buffer.from(b).toString('utf8')) : Array.from(output.data as ArrayLike<number | bigint | boolean>, jsonValue);
    body[output.name] = values.length === 1 ? values[0] : values;
  }
  return body;
}

const jsonValue = (value: number | bigint | boolean): number | boolean => (typeof value === 'bigint' ? Number(value) : value);

/** The request's responses: a decoupled model's stream, or a one-response model's answer as a stream of one. */
export function tensorResponses(service: InferenceService, request: InferRequest, signal: AbortSignal): AsyncIterable<InferStreamEvent> {
  if (service.modelConfig(request.model, request.version).model_transaction_policy.decoupled) {
    const events = service.inferStream?.(request, signal);
    if (events === undefined) throw new ConveyorError('UNSUPPORTED', `model '${request.model}' is decoupled and cannot stream here`);
    return events;
  }
  return (async function* one() {
    yield { response: await service.infer(request, signal), final: true };
  })();
}

/** /generate: exactly one response, as Triton answers it; a decoupled model that sends more is told to use generate_stream. */
export async function oneTensorResponse(events: AsyncIterable<InferStreamEvent>, model: string): Promise<InferResponse> {
  let answer: InferResponse | undefined;
  for await (const event of events) {
    if (event.response === undefined) continue;
    if (answer !== undefined) throw invalidArg(`model '${model}' sent more than one response: use generate_stream`);
    answer = event.response;
  }
  if (answer === undefined) throw new ConveyorError('INTERNAL', `model '${model}' ended without a response`);
  return answer;
}
