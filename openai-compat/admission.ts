// Load shedding for the OpenAI routes (--max-queued-requests). A generation counts as queued
// from the moment it is accepted until its first token arrives (waiting in the engine's queue
// or in prefill): that is the backlog a new request would wait behind. Past the bound a request
// gets 503 with `retry-after` (errors.ts adds it to every 503), which OpenAI's SDKs honour with a backoff retry, instead of a
// time-to-first-token that grows without limit. Each of n choices counts as one generation.

import { OpenAIRequestError, RETRY_AFTER_SECONDS } from './errors.js';

export class Admission {
  private readonly queued = new Map<string, number>();

  /** `maxQueued` 0 never sheds (vLLM's behaviour). */
  constructor(private readonly maxQueued: number) {}

  queuedFor(model: string): number {
    return this.queued.get(model) ?? 0;
  }

  /** Admits `count` generations for `model` or throws 503; each admitted one must `leave` once. */
  enter(model: string, count: number): void {
    const now = this.queuedFor(model);
    // A request larger than the bound still runs when nothing else waits, or it never could.
    if (this.maxQueued > 0 && now > 0 && now + count > this.maxQueued) {
      throw new OpenAIRequestError(
        'UNAVAILABLE',
        `The server is overloaded: ${now} generations for model '${model}' are waiting for their first token (limit ${this.maxQueued}). Retry after ${RETRY_AFTER_SECONDS}s.`,
        undefined,
        'service_unavailable',
      );
    }
    this.queued.set(model, now + count);
  }

  leave(model: string): void {
    const now = this.queuedFor(model) - 1;
    if (now > 0) this.queued.set(model, now);
    else this.queued.delete(model);
  }
}
