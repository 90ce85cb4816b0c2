// Turning a merged choice-event stream into an HTTP answer, the same way for chat and
// completions: either one JSON body after the last event, or SSE chunks as events arrive. A
// stream's headers go out with its first chunk (or its first keep-alive comment, while the
// request waits longer than --sse-keep-alive-interval), so a request the engine refuses before
// producing anything still gets a plain HTTP error; after that, errors travel as an error chunk
// (`data: {"error": …}`) and `data: [DONE]`, which is also how a client that read nothing while
// its model unloads is told it was dropped (the SseWriter's farewell).

import type { FastifyReply } from 'fastify';
import type { GenerationEvent } from '../src/contracts/text-generation.js';
import { DEFAULT_LIMITS } from '../src/config/limits.js';
import { ConveyorError } from '../src/errors.js';
import { openaiFailure } from './errors.js';
import type { ChoiceEvent } from '../src/server/kit/choices.js';
import { DONE_EVENT, type SseEvent, SseWriter } from '../src/server/kit/sse.js';
import type { ClosingModel } from '../src/server/kit/stalled-writes.js';
import { responseHead, type ResponseMeta, type UsageTally } from './wire.js';

export interface StreamPlan {
  readonly meta: ResponseMeta;
  /**
   * Every chunk's leading fields: OpenAI's id / object / created / model for the chunk object
   * named, or a protocol's own (vLLM's generate route: request_id).
   */
  readonly head: 'chat.completion.chunk' | 'text_completion' | Readonly<Record<string, unknown>>;
  readonly includeUsage: boolean;
  readonly usage: UsageTally;
  /** The chunk choice entries for an event (one chunk each, in order); none when it carries nothing to send. */
  readonly choice: (index: number, event: GenerationEvent) => readonly Record<string, unknown>[] | Record<string, unknown> | null;
  /** A client that reads nothing this long while output waits is dropped; default: the limits table's. */
  readonly sendTimeoutMs?: number | undefined;
  /** A stream silent this long gets a keep-alive comment; default: the limits table's (0: none). */
  readonly keepAliveMs?: number | undefined;
  /** The model served: while it unloads, a client that reads nothing is dropped sooner (--undelivered-output-timeout-secs). */
  readonly model?: ClosingModel;
}

/** An engine-side abort the client did not ask for (shutdown, engine stopped). */
function abortedByServer(): ConveyorError {
  return new ConveyorError('UNAVAILABLE', 'the generation was aborted by the server (shutting down or the engine stopped); retry the request');
}

/** Calls `onEvent` for every event; resolves once every choice finished. */
export async function collectChoices(events: AsyncIterable<ChoiceEvent>, usage: UsageTally, onEvent: (index: number, event: GenerationEvent) => void): Promise<void> {
  for await (const { index, event } of events) {
    if (event.finishReason === 'abort') throw abortedByServer();
    if (event.finishReason !== null) usage.record(index, event.usage);
    onEvent(index, event);
  }
}

/** How a chat or completions stream already open ends on a failure: OpenAI's error chunk, then [DONE] (as vLLM ends it). */
export function streamFailureEvents(error: unknown): readonly SseEvent[] {
  return [{ payload: openaiFailure(error).body }, DONE_EVENT];
}

/** Headers fastify hooks already set on the reply (CORS), for a response written by hand. */
function hookHeaders(reply: FastifyReply): Record<string, string | number | string[]> {
  const out: Record<string, string | number | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) out[name] = value;
  return out;
}

export async function streamChoices(reply: FastifyReply, events: AsyncIterable<ChoiceEvent>, plan: StreamPlan): Promise<void> {
  reply.hijack();
  const sse = new SseWriter(reply.raw, plan.sendTimeoutMs, plan.model, streamFailureEvents);
  const open = (): void => sse.open({ ...hookHeaders(reply), 'x-request-id': plan.meta.id });
  sse.keepAlive(plan.keepAliveMs ?? DEFAULT_LIMITS.sseKeepAliveIntervalSecs * 1000, open);
  const head = typeof plan.head === 'string' ? responseHead(plan.meta, plan.head) : plan.head;
  const tail = plan.includeUsage ? { usage: null } : {};
  try {
    for await (const { index, event } of events) {
      // Leaving the loop ends the merged stream, which aborts every generation still running.
      if (sse.isClosed) return;
      if (event.finishReason === 'abort') throw abortedByServer();
      if (event.finishReason !== null) plan.usage.record(index, event.usage);
      const entries = plan.choice(index, event);
      for (const choice of entries === null ? [] : Array.isArray(entries) ? entries : [entries]) {
        open();
        await sse.send({ ...head, choices: [choice], ...tail });
      }
    }
    if (sse.isClosed) return;
    open();
    if (plan.includeUsage) await sse.send({ ...head, choices: [], usage: plan.usage.toWire() });
    await sse.done();
  } catch (error) {
    if (sse.isClosed) return;
    const failure = openaiFailure(error);
    if (!sse.isOpen) {
      reply.raw.writeHead(failure.status, { ...hookHeaders(reply), ...failure.headers, 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify(failure.body));
      return;
    }
    await sse.sendAll(streamFailureEvents(error));
    sse.end();
  }
}
