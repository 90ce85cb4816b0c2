// Load shedding for the OpenAI routes (--max-queued-requests). A generation counts as queued
// from the moment it is accepted until its first token arrives (waiting in the engine's queue
// or in prefill): that is the backlog a new request would wait behind. Past the bound a request
// gets 503 with `retry-after` / `retry-after-ms` from the retry policy (retry-after.ts: the
// measured drain rate, each shed request booked its own return slot), which OpenAI's SDKs honour,
// instead of a time-to-first-token that grows without limit. Each of n choices counts as one generation.

import { OpenAIRequestError } from './errors.js';
import { RetryAfterPolicy } from './retry-after.js';

export class Admission {
  private readonly queued = new Map<string, number>();

  /** `maxQueued` 0 never sheds (vLLM's behaviour). */
  constructor(
    private readonly maxQueued: number,
    private readonly retry = new RetryAfterPolicy({ now: () => performance.now(), random: Math.random }),
  ) {}

  queuedFor(model: string): number {
    return this.queued.get(model) ?? 0;
  }

  /** Admits `count` generations for `model` or throws 503; each admitted one must `leave` once. */
  enter(model: string, count: number): void {
    const now = this.queuedFor(model);
    // A request larger than the bound still runs when nothing else waits, or it never could.
    if (this.maxQueued > 0 && now > 0 && now + count > this.maxQueued) {
      const advice = this.retry.advise(model, now, count, this.maxQueued);
      throw new OpenAIRequestError(
        'UNAVAILABLE',
        `The server is overloaded: ${now} generations for model '${model}' are waiting for their first token (limit ${this.maxQueued}). Retry after ${advice.ms} ms.`,
        undefined,
        'service_unavailable',
        { 'retry-after': String(advice.seconds), 'retry-after-ms': String(advice.ms) },
      );
    }
    this.queued.set(model, now + count);
  }

  /** One generation left the queue: its first token arrived, or it ended before one did. */
  leave(model: string): void {
    this.retry.recordDrain(model);
    const now = this.queuedFor(model) - 1;
    if (now > 0) this.queued.set(model, now);
    else this.queued.delete(model);
  }
}
