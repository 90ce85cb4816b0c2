// Triton's generate extension for LLM models:
//   POST /v2/models/{m}[/versions/{v}]/generate         → one JSON response
//   POST /v2/models/{m}[/versions/{v}]/generate_stream  → Server-Sent Events, one response each
// Body: {"id"?, "text_input", "parameters"?: {...}, plus other inputs by name (stream, max_tokens,
// exclude_input_in_output, return_finish_reason, …)}. A response is {"model_name",
// "model_version", "id"?, "text_output", …other outputs}. A request refused before inference
// starts gets a normal {"error"} with the catalog's status; once the stream's 200 is out, a
// failure arrives as a `data: {"error": …}` event. A client that goes away aborts the request.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { asConveyorError, ConveyorError, invalidArg } from '../../../errors.js';
import { servingLlm, type LlmLookup } from '../../generation/lookup.js';
import { buildTritonLlmRequest, isTritonInput, TRITON_LLM_INPUTS, type TritonInputValues, type TritonLlmRequest } from '../../generation/triton-llm-request.js';
import { generateTritonLlm, type TritonLlmResponse } from '../../generation/triton-llm.js';
import { parseJson } from '../codec/json-body.js';
import { abortOnDisconnect } from '../../kit/transport.js';
import { SseWriter } from '../../kit/sse.js';
import { isObject } from '../../kit/body.js';
import { DEFAULT_LIMITS } from '../../../config/limits.js';
import { modelPaths, versionOf, type ModelParams } from './models.js';
import { PRIORITY_HEADER, priorityOverride } from '../../../serving/request-priority.js';

type GenerateRequest = FastifyRequest<{ Params: ModelParams }>;

/** `streamSendTimeoutMs`: a generate_stream client that reads nothing this long is dropped. */
export function registerGenerateRoutes(app: FastifyInstance, lookup: LlmLookup, streamSendTimeoutMs = DEFAULT_LIMITS.streamSendTimeoutSecs * 1000): void {
  for (const path of modelPaths('/generate')) {
    app.post<{ Params: ModelParams }>(path, (request, reply) => handleGenerate(lookup, request, reply));
  }
  for (const path of modelPaths('/generate_stream')) {
    app.post<{ Params: ModelParams }>(path, (request, reply) => handleGenerateStream(lookup, request, reply, streamSendTimeoutMs));
  }
}

async function handleGenerate(lookup: LlmLookup, request: GenerateRequest, reply: FastifyReply): Promise<Record<string, unknown>> {
  // Exactly one response: a streamed request is answered with all of its text at once.
  const llm = { ...requestFromBody(request), stream: false };
  let answer: TritonLlmResponse | undefined;
  for await (const response of generateTritonLlm(lookup, llm, abortOnDisconnect(reply.raw))) answer = response;
  if (!answer) throw new ConveyorError('INTERNAL', 'the generation ended without a response');
  return responseJson(answer);
}

async function handleGenerateStream(lookup: LlmLookup, request: GenerateRequest, reply: FastifyReply, streamSendTimeoutMs: number): Promise<void> {
  const llm = requestFromBody(request);
  const responses = generateTritonLlm(lookup, llm, abortOnDisconnect(reply.raw));
  // The first response fixes the status: anything refused before it is a plain JSON error.
  let next = await responses.next();
  reply.hijack();
  // The model the stream serves bounds a client that reads nothing while it unloads (stalled-writes.ts).
  const sse = new SseWriter(reply.raw, streamSendTimeoutMs, servingLlm(lookup, llm.model, llm.version));
  sse.open();
  try {
    while (!next.done && !sse.isClosed) {
      await sse.send(responseJson(next.value));
      if (next.value.final) break;
      next = await responses.next();
    }
  } catch (error) {
    await sse.send({ error: asConveyorError(error).message });
  } finally {
    await responses.return(undefined);
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
