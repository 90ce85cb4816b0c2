// POST /v1/responses: the request read into one chat prompt (instructions, the stored
// conversation of previous_response_id, the new input items), run as one choice through the
// same admission and engine path as chat, and answered as a `response` object — whole, or as
// the Responses event stream (response.created, response.in_progress, the output items' events,
// then response.completed or response.incomplete; a failure after the stream opened is an
// `error` event and response.failed). Every event carries its sequence_number. A stream's
// headers go out with the first engine event, so a request refused before it produces anything
// (overload, a bad prompt) still gets a plain HTTP error. With store (the default) the finished
// response is kept for previous_response_id, GET, input_items and DELETE; background: true
// answers at once and generates detached (background.ts). A streaming client that reads nothing
// while the model unloads or the server drains is dropped after --undelivered-output-timeout-secs
// with the same `error` and response.failed events queued behind what it has not read
// (kit/stalled-writes.ts).

import type { FastifyReply } from 'fastify';
import type { GenerationEvent, ProcessedRequest } from '../../src/contracts/text-generation.js';
import { ConveyorError, invalidArg } from '../../src/errors.js';
import type { GenerateInput, LlmModel } from '../../src/serving/llm-backend.js';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';
import type { OpenAIContext } from '../context.js';
import { OpenAIRequestError, openaiFailure } from '../errors.js';
import { runChoices } from '../../src/server/kit/choices.js';
import { requireObject } from '../../src/server/kit/body.js';
import { type SseEvent, SseWriter } from '../../src/server/kit/sse.js';
import { chatToolPlan, keepsSpecialTokens, type ChatToolPlan } from '../../src/server/kit/tool-plan.js';
import { inputItems, itemsToMessages, type Item } from './input-items.js';
import { runInBackground } from './background.js';
import { newItemId, ResponseOutput, type OutputEvent, type WireObject } from './output-events.js';
import { OutputReader } from './output-reader.js';
import { inResponsesTerms, readResponsesRequest, type ResponsesRequest } from './request.js';
import { withCustomConstraints, withForcedCustom } from '../custom-tools.js';
import { responseObject, wireUsage, type ResponseIdentity, type ResponseStatus } from './response-object.js';
import type { ResponseStore, StoredResponse } from './stored.js';
import { PRIORITY_HEADER, priorityOverride, withPriority } from '../../src/serving/request-priority.js';

export function previousNotFound(id: string): OpenAIRequestError {
  return new OpenAIRequestError('INVALID_ARG', `Previous response with id '${id}' not found.`, 'previous_response_id', 'previous_response_not_found');
}

interface Prepared {
  readonly request: ResponsesRequest;
  readonly model: LlmModel;
  readonly plan: ChatToolPlan;
  readonly input: GenerateInput;
  /** This request's own input items, item references resolved. */
  readonly ownItems: readonly Item[];
  /** Everything before this response's output: the previous response's history and output, then ownItems. */
  readonly history: readonly Item[];
}

async function prepare(ctx: OpenAIContext, store: ResponseStore, body: unknown): Promise<Prepared> {
  const request = readResponsesRequest(requireObject(body));
  const model = ctx.llm(request.model);
  const previous = request.previousResponseId === null ? null : store.get(request.previousResponseId);
  if (previous === undefined) throw previousNotFound(request.previousResponseId!);
  const ownItems = inputItems(request.input, (id, at) => store.item(id) ?? itemNotFound(id, at));
  const earlier = previous === null ? [] : [...previous.history, ...(previous.response.output as Item[])];
  const history = [...earlier, ...ownItems];
  const messages = itemsToMessages(history, request.instructions, earlier.length);
  const chatPlan = await inResponsesTerms(() => chatToolPlan(request.chatTools, model));
  const plan = withForcedCustom(withCustomConstraints(chatPlan, request.tools.custom, request.chatTools.tool_choice, request.model), request.forcedCustom);
  const { sampling, wireNames } = request.sampling;
  const input: GenerateInput = {
    prompt: { kind: 'chat', messages, addGenerationPrompt: true, chatTemplateKwargs: request.chatTemplateKwargs, tools: plan.tools },
    sampling: { ...sampling, skip_special_tokens: keepsSpecialTokens(plan, sampling.skip_special_tokens) },
    wireNames,
    ...(plan.grammar ? { grammar: { spec: plan.grammar, param: request.forcedCustom?.param ?? (plan.grammar.kind === 'tool_calls' ? 'tools' : 'tool_choice') } } : {}),
  };
  return { request, model, plan, input, ownItems, history };
}

function itemNotFound(id: string, at: string): never {
  throw invalidArg(`${at}: item with id '${id}' not found (item_reference needs a stored response's item)`, `${at}.id`);
}

/** One response's output as engine events arrive: the reader's parts become items and events. */
class ResponseRun {
  readonly output: ResponseOutput;
  private readonly reader: OutputReader;
  status: ResponseStatus = 'in_progress';
  usage: WireObject | null = null;

  constructor(model: LlmModel, prepared: ProcessedRequest, plan: ChatToolPlan, request: ResponsesRequest) {
    this.reader = new OutputReader(model, prepared, plan);
    this.output = new ResponseOutput(newItemId, { names: new Set(request.tools.custom.keys()), rawInput: request.forcedCustom !== null });
  }

  onEvent(event: GenerationEvent): OutputEvent[] {
    if (event.finishReason === 'abort') throw new ConveyorError('UNAVAILABLE', 'the generation was aborted by the server (shutting down or the engine stopped); retry the request');
    const last = event.finishReason !== null;
    const events = this.output.push(this.reader.push(event));
    if (!last) return events;
    this.status = event.finishReason === 'length' ? 'incomplete' : 'completed';
    this.usage = wireUsage(event.usage);
    return [...events, ...this.output.finish(this.status)];
  }
}

export async function createResponse(ctx: OpenAIContext, store: ResponseStore, body: unknown, reply: FastifyReply, signal: AbortSignal): Promise<unknown> {
  const prepared = await prepare(ctx, store, body);
  const engineInput = await inResponsesTerms(() => prepared.model.prepare(prepared.input));
  const identity: ResponseIdentity = { id: newItemId('resp'), createdAt: Math.floor(Date.now() / 1000), model: prepared.request.model };
  // A background response outlives its request: only cancel stops it.
  const controller = new AbortController();
  const events = runChoices(prepared.model, withPriority([engineInput], priorityOverride(reply.request.headers[PRIORITY_HEADER])), prepared.request.background ? controller.signal : signal);
  const run = new ResponseRun(prepared.model, engineInput, prepared.plan, prepared.request);
  const snapshot = (): WireObject => responseObject(identity, prepared.request.echo, { status: run.status, output: run.output.items, usage: run.usage });
  const keep = (response: WireObject): void => {
    if (prepared.request.store) store.set({ response, input: prepared.ownItems, history: prepared.history });
  };
  if (prepared.request.background) {
    run.status = 'queued';
    const queued = snapshot();
    keep(queued);
    runInBackground(store, { id: identity.id, events, run, snapshot, keep, controller });
    reply.header('x-request-id', identity.id);
    return queued;
  }
  if (prepared.request.stream) {
    await streamResponse(ctx, reply, { id: identity.id, model: prepared.model, events, run, snapshot, keep });
    return reply;
  }
  for await (const { event } of events) run.onEvent(event);
  const response = snapshot();
  keep(response);
  reply.header('x-request-id', identity.id);
  return response;
}

interface ResponseStream {
  readonly id: string;
  /** The model generating: while it is going, a client that reads nothing is dropped (kit/stalled-writes.ts). */
  readonly model: LlmModel;
  readonly events: AsyncIterable<{ readonly event: GenerationEvent }>;
  readonly run: ResponseRun;
  readonly snapshot: () => WireObject;
  readonly keep: (response: WireObject) => void;
}

async function streamResponse(ctx: OpenAIContext, reply: FastifyReply, { id, model, events, run, snapshot, keep }: ResponseStream): Promise<void> {
  reply.hijack();
  let sequence = 0;
  const numbered = (event: OutputEvent): SseEvent => ({ name: event.type, payload: { ...event, sequence_number: sequence++ } });
  // A failure after the stream opened: the `error` event, then response.failed (kept as failed).
  const failureEvents = (error: unknown): readonly SseEvent[] => {
    const failure = openaiFailure(error);
    const { message, code, param } = failure.body.error;
    run.status = 'failed';
    const response = { ...snapshot(), error: { code: 'server_error', message } };
    keep(response);
    return [numbered({ type: 'error', code: code ?? failure.body.error.type, message, param }), numbered({ type: 'response.failed', response })];
  };
  const sse = new SseWriter(reply.raw, ctx.options.streamSendTimeoutMs, model, failureEvents);
  const openHeaders = (): void => sse.open({ ...hookHeaders(reply), 'x-request-id': id });
  // A request still waiting (queue, prefill) past the interval opens the stream with a keep-alive comment; response.created follows with the first event.
  sse.keepAlive(ctx.options.sseKeepAliveMs ?? DEFAULT_LIMITS.sseKeepAliveIntervalSecs * 1000, openHeaders);
  let created = false;
  const send = (event: OutputEvent): Promise<void> => sse.sendAll([numbered(event)]);
  const open = async (): Promise<void> => {
    if (created) return;
    created = true;
    openHeaders();
    const response = snapshot();
    await send({ type: 'response.created', response });
    await send({ type: 'response.in_progress', response });
  };
  try {
    for await (const { event } of events) {
      // Leaving the loop ends the merged stream, which aborts the generation.
      if (sse.isClosed) return;
      await open();
      for (const out of run.onEvent(event)) await send(out);
    }
    if (sse.isClosed) return;
    await open();
    const response = snapshot();
    keep(response);
    await send({ type: run.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response });
    sse.end();
  } catch (error) {
    if (sse.isClosed) return;
    if (!sse.isOpen) {
      const failure = openaiFailure(error);
      reply.raw.writeHead(failure.status, { ...hookHeaders(reply), ...failure.headers, 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify(failure.body));
      return;
    }
    await sse.sendAll(failureEvents(error));
    sse.end();
  }
}

/** Headers fastify hooks already set on the reply (CORS), for a response written by hand. */
function hookHeaders(reply: FastifyReply): Record<string, string | number | string[]> {
  const out: Record<string, string | number | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) out[name] = value;
  return out;
}

export type { StoredResponse };
