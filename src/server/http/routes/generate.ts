// Triton's generate extension for LLM models:
//   POST /v2/models/{m}[/versions/{v}]/generate         → one JSON response
//   POST /v2/models/{m}[/versions/{v}]/generate_stream  → Server-Sent Events, one response each
// Body: {"id"?, "text_input", "parameters"?: {...}, plus other inputs by name (stream, max_tokens,
// exclude_input_in_output, return_finish_reason, …)}. A response is {"model_name",
// "model_version", "id"?, "text_output", …other outputs}. A request refused before inference
// starts gets a normal {"error"} with the catalog's status; once the stream's 200 is out (its
// first response, or a keep-alive comment while the request waits: src/server/kit/sse.ts), a
// failure arrives as a `data: {"error": …}` event — also the last words of a client dropped for
// reading nothing while its model unloads (--undelivered-output-timeout-secs). A client that goes
// away aborts the request.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { asConveyorError, ConveyorError, invalidArg } from '../../../errors.js';
import { servingLlm, type LlmLookup } from '../../generation/lookup.js';
import { buildTritonLlmRequest, isTritonInput, TRITON_LLM_INPUTS, type TritonInputValues, type TritonLlmRequest } from '../../../triton-llm/request.js';
import { generateTritonLlm, type TritonLlmResponse } from '../../generation/triton-llm.js';
import { parseJson } from '../codec/json-body.js';
import type { InferenceService } from '../../../contracts/inference-service.js';
import type { InferRequest } from '../../../contracts/infer.js';
import { oneTensorResponse, tensorRequestFromBody, tensorResponseJson, tensorResponses } from './generate-tensors.js';
import { abortOnDisconnect } from '../../kit/transport.js';
import { type SseFarewell, SseWriter } from '../../kit/sse.js';
import { isObject } from '../../kit/body.js';
import { DEFAULT_LIMITS } from '../../../config/limits.js';
import { modelPaths, versionOf, type ModelParams } from './models.js';
import { PRIORITY_HEADER, priorityOverride } from '../../../serving/request-priority.js';

type GenerateRequest = FastifyRequest<{ Params: ModelParams }>;

/** How generate_stream's SSE behaves: a client that reads nothing for `sendTimeoutMs` is dropped; a silence of `keepAliveMs` (0: never) gets a keep-alive comment. */
export interface GenerateStreamTimings {
  readonly sendTimeoutMs: number;
  readonly keepAliveMs: number;
}

const DEFAULT_TIMINGS: GenerateStreamTimings = { sendTimeoutMs: DEFAULT_LIMITS.streamSendTimeoutSecs * 1000, keepAliveMs: DEFAULT_LIMITS.sseKeepAliveIntervalSecs * 1000 };

/** LLMs answer as Triton's vLLM backend does; any other model (`service`) maps its inputs and outputs to JSON keys (generate-tensors.ts). */
export function registerGenerateRoutes(app: FastifyInstance, lookup: LlmLookup, timings: GenerateStreamTimings = DEFAULT_TIMINGS, service?: InferenceService): void {
  for (const path of modelPaths('/generate')) {
    app.post<{ Params: ModelParams }>(path, (request, reply) => (isLlm(request, service) ? handleGenerate(lookup, request, reply) : handleTensorGenerate(service!, request, reply)));
  }
  for (const path of modelPaths('/generate_stream')) {
    app.post<{ Params: ModelParams }>(path, (request, reply) =>
      isLlm(request, service) ? handleGenerateStream(lookup, request, reply, timings) : handleTensorGenerateStream(service!, request, reply, timings),
    );
  }
}

/**
 * Whether the model is an LLM, by its config: a model that is one but cannot serve now (the
 * server drains, it is unloading) still answers on the LLM path, in that path's words. Without a
 * service, or for a model the service does not know, the LLM path answers too (it says why).
 */
function isLlm(request: GenerateRequest, service: InferenceService | undefined): boolean {
  if (service === undefined) return true;
  try {
    return service.modelConfig(request.params.model, versionOf(request.params)).backend === 'llm';
  } catch {
    return true;
  }
}

function tensorRequest(service: InferenceService, request: GenerateRequest): InferRequest {
  const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  if (body.byteLength === 0) throw invalidArg("the generate request needs a JSON body with the model's inputs");
  const parsed = parseJson(body.toString('utf8'));
  if (!isObject(parsed)) throw invalidArg('the generate request must be a JSON object');
  const ref = { model: request.params.model, ...(versionOf(request.params) !== undefined ? { version: versionOf(request.params)! } : {}) };
  return tensorRequestFromBody(service.modelConfig(ref.model, ref.version), ref, parsed);
}

async function handleTensorGenerate(service: InferenceService, request: GenerateRequest, reply: FastifyReply): Promise<Record<string, unknown>> {
  const infer = tensorRequest(service, request);
  return tensorResponseJson(await oneTensorResponse(tensorResponses(service, infer, abortOnDisconnect(reply.raw)), infer.model));
}

async function handleTensorGenerateStream(service: InferenceService, request: GenerateRequest, reply: FastifyReply, timings: GenerateStreamTimings): Promise<void> {
  const infer = tensorRequest(service, request);
  const events = tensorResponses(service, infer, abortOnDisconnect(reply.raw))[Symbol.asyncIterator]();
  // A flags-only final ends the stream without an event of its own.
  await streamResponses(reply, new SseWriter(reply.raw, timings.sendTimeoutMs), events, timings, (event) => ({
    json: event.response ? tensorResponseJson(event.response) : undefined,
    final: event.final,
  }));
}

async function handleGenerate(lookup: LlmLookup, request: GenerateRequest, reply: FastifyReply): Promise<Record<string, unknown>> {
  // Exactly one response: a streamed request is answered with all of its text at once.
  const llm = { ...requestFromBody(request), stream: false };
  let answer: TritonLlmResponse | undefined;
  for await (const response of generateTritonLlm(lookup, llm, abortOnDisconnect(reply.raw))) answer = response;
  if (!answer) throw new ConveyorError('INTERNAL', 'the generation ended without a response');
  return responseJson(answer);
}

async function handleGenerateStream(lookup: LlmLookup, request: GenerateRequest, reply: FastifyReply, timings: GenerateStreamTimings): Promise<void> {
  const llm = requestFromBody(request);
  const responses = generateTritonLlm(lookup, llm, abortOnDisconnect(reply.raw));
  // The model the stream serves bounds a client that reads nothing while it unloads (stalled-writes.ts); such a client is told why.
  const sse = new SseWriter(reply.raw, timings.sendTimeoutMs, servingLlm(lookup, llm.model, llm.version), generateStreamFarewell);
  await streamResponses(reply, sse, responses, timings, (response) => ({ json: responseJson(response), final: response.final }));
}

/** How generate_stream ends on a failure once open, Triton's way: one `data: {"error": …}` event. */
export const generateStreamFarewell: SseFarewell = (error) => [{ payload: { error: error.message } }];

/**
 * generate_stream's one loop, whatever the model: an event per response until the final one. The
 * first response fixes the status: anything refused before it (and before a keep-alive, sent
 * while the request waits in a queue or prefill) is a plain JSON error; later, an error event.
 */
async function streamResponses<T>(
  reply: FastifyReply,
  sse: SseWriter,
  events: AsyncIterator<T>,
  timings: GenerateStreamTimings,
  present: (event: T) => { readonly json: Record<string, unknown> | undefined; readonly final: boolean },
): Promise<void> {
  const open = (): void => {
    if (sse.isOpen) return;
    reply.hijack();
    sse.open();
  };
  const first = events.next();
  sse.keepAlive(timings.keepAliveMs, open);
  let next: IteratorResult<T>;
  try {
    next = await first;
  } catch (error) {
    if (!sse.isOpen) {
      sse.end();
      throw error;
    }
    await sse.sendAll(generateStreamFarewell(asConveyorError(error)));
    sse.end();
    return;
  }
  open();
  try {
    while (!next.done && !sse.isClosed) {
      const { json, final } = present(next.value);
      if (json) await sse.send(json);
      if (final) break;
      next = await events.next();
    }
  } catch (error) {
    await sse.sendAll(generateStreamFarewell(asConveyorError(error)));
  } finally {
    await events.return?.(undefined);
    sse.end();
  }
}

function responseJson(response: TritonLlmResponse): Record<string, unknown> {
  const body: Record<string, unknown> = { model_name: response.model, model_version: response.version };
  if (response.id !== undefined) body['id'] = response.id;
  for (const output of response.outputs) body[output.name] = output.value;
  return body;
}

/** The body's keys: id, parameters, and inputs by name (a one-element array counts as its element). */
function requestFromBody(request: GenerateRequest): TritonLlmRequest {
  const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  if (body.byteLength === 0) throw invalidArg('the generate request needs a JSON body with text_input');
  const parsed = parseJson(body.toString('utf8'));
  if (!isObject(parsed)) throw invalidArg('the generate request must be a JSON object');
  const { id, parameters, ...rest } = parsed;
  if (id !== undefined && typeof id !== 'string') throw invalidArg('id must be a string', 'id');
  if (parameters !== undefined && !isObject(parameters)) throw invalidArg('parameters must be a JSON object', 'parameters');
  const inputs: TritonInputValues = {};
  for (const [key, value] of Object.entries(rest)) {
    if (!isTritonInput(key)) throw invalidArg(`unexpected key '${key}': not an input of this model (${Object.keys(TRITON_LLM_INPUTS).join(', ')})`, key);
    inputs[key] = Array.isArray(value) && value.length === 1 ? value[0] : value;
  }
  const ref = { model: request.params.model, version: versionOf(request.params), ...(id !== undefined ? { id } : {}) };
  const llm = buildTritonLlmRequest(ref, inputs, parameters ?? {});
  // Triton's own `priority` parameter is reserved; vLLM's header sets the engine's.
  const priority = priorityOverride(request.headers[PRIORITY_HEADER]);
  return priority === undefined ? llm : { ...llm, sampling: { ...llm.sampling, priority } };
}
