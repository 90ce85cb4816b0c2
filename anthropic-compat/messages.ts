// POST /v1/messages: one chat generation answered as an Anthropic Message, whole or as
// Anthropic's event stream: message_start (the message with empty content and the prompt's
// usage), content_block_start, ping, content_block_delta…, content_block_stop per block,
// message_delta (stop_reason, stop_sequence, usage), message_stop. The stream's headers go out
// with its first event, so a request refused before generating (overload, a bad constraint)
// still gets a plain HTTP error; after that, a failure is an `error` event. A client that goes
// away aborts the generation (runChoices stops with it); one that reads nothing while the model
// unloads or the server drains is dropped after --undelivered-output-timeout-secs with the same
// `error` event (overloaded_error) queued behind what it has not read (kit/stalled-writes.ts).

import type { FastifyReply } from 'fastify';
import type { GenerationEvent } from '../src/contracts/text-generation.js';
import { ConveyorError } from '../src/errors.js';
import { prepareChoices, runChoices } from '../src/server/kit/choices.js';
import type { ChatToolPlan } from '../src/server/kit/tool-plan.js';
import { DEFAULT_LIMITS } from '../src/config/limits.js';
import type { AnthropicContext, AnthropicOptions } from './context.js';
import { type SseEvent, SseWriter } from '../src/server/kit/sse.js';
import type { ClosingModel } from '../src/server/kit/stalled-writes.js';
import { ContentBlockStream, foldBlocks, type BlockEvent, type ReasoningOfModel } from './content.js';
import { anthropicFailure } from './errors.js';
import { checkFields, MESSAGES_FIELDS, messagesInput, MODEL_REQUIRED, streamFlag } from './request.js';
import { requireModel, requireObject, type Body } from '../src/server/kit/body.js';
import { messagesToolPlan } from './tools.js';
import { messagesUsage, newMessageId, newRequestId, stopOf } from './wire.js';
import { PRIORITY_HEADER, priorityOverride, withPriority } from '../src/serving/request-priority.js';

/** An engine-side abort the client did not ask for (shutdown, engine stopped). */
function abortedByServer(): ConveyorError {
  return new ConveyorError('UNAVAILABLE', 'the generation was aborted by the server (shutting down or the engine stopped); retry the request');
}

function stopSequences(body: Body): readonly string[] {
  const value = body.stop_sequences;
  return Array.isArray(value) ? value.filter((s): s is string => typeof s === 'string') : [];
}

interface Generation {
  /** The model generating: while it is going, a client that reads nothing is dropped (kit/stalled-writes.ts). */
  readonly model: ClosingModel;
  readonly plan: ChatToolPlan;
  readonly reasoning: ReasoningOfModel;
  readonly events: AsyncGenerator<GenerationEvent>;
  readonly head: { id: string; type: 'message'; role: 'assistant'; model: string };
  readonly stops: readonly string[];
}

async function* single(events: AsyncIterable<{ event: GenerationEvent }>): AsyncGenerator<GenerationEvent> {
  for await (const { event } of events) {
    if (event.finishReason === 'abort') throw abortedByServer();
    yield event;
  }
}

export async function createMessage(ctx: AnthropicContext, rawBody: unknown, reply: FastifyReply, signal: AbortSignal): Promise<unknown> {
  const body = requireObject(rawBody);
  checkFields(body, MESSAGES_FIELDS);
  const requested = requireModel(body, MODEL_REQUIRED);
  const stream = streamFlag(body);
  const model = ctx.llm(requested);
  const plan = messagesToolPlan(body, model);
  const choices = await prepareChoices(model, messagesInput(body, plan), 1);
  const generation: Generation = {
    model,
    plan,
    reasoning: model.reasoningOf(choices[0]!),
    events: single(runChoices(model, withPriority(choices, priorityOverride(reply.request.headers[PRIORITY_HEADER])), signal)),
    head: { id: newMessageId(), type: 'message', role: 'assistant', model: requested },
    stops: stopSequences(body),
  };
  reply.header('request-id', newRequestId());
  if (stream) {
    await streamMessage(reply, generation, ctx.options);
    return reply;
  }
  return wholeMessage(generation);
}

async function wholeMessage({ plan, reasoning, events, head, stops }: Generation): Promise<unknown> {
  const reader = new ContentBlockStream(plan, reasoning);
  const blocks: BlockEvent[] = [];
  for await (const event of events) {
    blocks.push(...reader.push(event.text, event.finishReason !== null));
    if (event.finishReason === null) continue;
    const stop = stopOf(event.finishReason, event.stopReason, stops, reader.callCount);
    return { ...head, content: foldBlocks(blocks), ...stop, usage: messagesUsage(event.usage) };
  }
  throw new ConveyorError('INTERNAL', 'the generation ended without a finish reason');
}

/** Headers fastify hooks already set on the reply (CORS, request-id), for a response written by hand. */
function hookHeaders(reply: FastifyReply): Record<string, string | number | string[]> {
  const out: Record<string, string | number | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) out[name] = value;
  return out;
}

/** How a stream already open ends on a failure: Anthropic's `error` event. */
export function failureEvents(error: unknown): readonly SseEvent[] {
  return [{ name: 'error', payload: anthropicFailure(error).body }];
}

async function streamMessage(reply: FastifyReply, { model, plan, reasoning, events, head, stops }: Generation, options: AnthropicOptions): Promise<void> {
  reply.hijack();
  const sse = new SseWriter(reply.raw, options.streamSendTimeoutMs, model, failureEvents);
  // A request still waiting (queue, prefill) past the interval opens the stream with a keep-alive comment; message_start follows with the first event.
  sse.keepAlive(options.sseKeepAliveMs ?? DEFAULT_LIMITS.sseKeepAliveIntervalSecs * 1000, () => sse.open(hookHeaders(reply)));
  // Anthropic names every event after the `type` its data carries, and ends without [DONE].
  const send = <E extends { readonly type: string }>(event: E): Promise<void> => sse.sendEvent(event.type, event);
  const reader = new ContentBlockStream(plan, reasoning);
  let opened = false;
  let pinged = false;
  try {
    for await (const event of events) {
      // Leaving the loop ends the generation stream, which aborts the generation.
      if (sse.isClosed) return;
      if (!opened) {
        sse.open(hookHeaders(reply));
        opened = true;
        const { output_tokens_details: _, ...usage } = { ...messagesUsage(event.usage), output_tokens: 0 };
        await send({ type: 'message_start', message: { ...head, content: [], stop_reason: null, stop_sequence: null, usage } });
      }
      for (const block of reader.push(event.text, event.finishReason !== null)) {
        await send(block);
        // Anthropic's stream pings once the first block has started.
        if (!pinged) await send({ type: 'ping' });
        pinged = true;
      }
      if (event.finishReason === null) continue;
      if (!pinged) await send({ type: 'ping' });
      const stop = stopOf(event.finishReason, event.stopReason, stops, reader.callCount);
      await send({ type: 'message_delta', delta: stop, usage: messagesUsage(event.usage) });
      await send({ type: 'message_stop' });
      sse.end();
      return;
    }
  } catch (error) {
    if (sse.isClosed) return;
    const failure = anthropicFailure(error);
    if (!sse.isOpen) {
      reply.raw.writeHead(failure.status, { ...hookHeaders(reply), ...failure.headers, 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify(failure.body));
      return;
    }
    await sse.sendAll(failureEvents(error));
    sse.end();
  }
}
