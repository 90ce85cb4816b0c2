// Load shedding for every generation, whatever protocol it came by (--max-queued-requests,
// --max-num-queued-tokens). A generation counts as queued from the moment it is admitted until
// its first token arrives (waiting in the engine's queue or in prefill): that is the backlog a
// new request would wait behind. LlmModel.generate enters it, so the OpenAI, Responses and
// Anthropic routes, WebSocket generations, gRPC Generate, Triton generate / generate_stream and
// ModelStreamInfer all count toward one bound per model. Past it a request is refused with one
// neutral answer, Overloaded (UNAVAILABLE plus a wait from the retry policy, retry-after.ts: the
// measured drain rate, each shed request booked its own return slot); each front end words it
// its own way (503 + retry-after, 529, gRPC UNAVAILABLE, a WebSocket error frame).

import { ConveyorError } from '../errors.js';
import { type RetryAdvice, RetryAfterPolicy } from './retry-after.js';

export interface AdmissionLimits {
  /** --max-queued-requests: generations per model waiting for their first token; 0 never sheds (vLLM's behaviour). */
  readonly maxQueuedRequests?: number;
  /** --max-num-queued-tokens: the prompt tokens of those generations together; 0 never sheds. */
  readonly maxQueuedTokens?: number;
}

/** The neutral refusal: the model's queue is full, come back after `retryAfter`. */
export class Overloaded extends ConveyorError {
  constructor(
    message: string,
    readonly retryAfter: RetryAdvice,
  ) {
    super('UNAVAILABLE', message);
    this.name = 'Overloaded';
  }
}

/**
 * The wait as HTTP headers, for the HTTP front ends: `retry-after` in whole seconds (what HTTP
 * defines) and `retry-after-ms`, which OpenAI's and Anthropic's SDKs read first. None for any
 * other error.
 */
export function retryAfterHeaders(error: unknown): Record<string, string> {
  if (!(error instanceof Overloaded)) return {};
  return { 'retry-after': String(error.retryAfter.seconds), 'retry-after-ms': String(error.retryAfter.ms) };
}

/** One admitted generation's place in the queue; `leave` gives it back (only the first call counts). */
export interface AdmissionSeat {
  leave(): void;
}

interface Backlog {
  requests: number;
  tokens: number;
}

export class Admission {
  private readonly queued = new Map<string, Backlog>();
  private readonly maxRequests: number;
  private readonly maxTokens: number;

  constructor(
    limits: AdmissionLimits = {},
    private readonly retry = new RetryAfterPolicy({ now: () => performance.now(), random: Math.random }),
  ) {
    this.maxRequests = limits.maxQueuedRequests ?? 0;
    this.maxTokens = limits.maxQueuedTokens ?? 0;
  }

  queuedFor(model: string): number {
    return this.queued.get(model)?.requests ?? 0;
  }

  queuedTokensFor(model: string): number {
    return this.queued.get(model)?.tokens ?? 0;
  }

  /**
   * Admits `count` generations of `model` with `tokens` prompt tokens among them, or throws
   * Overloaded; each admitted one must `leave` once. A request larger than a bound still runs
   * when nothing else waits, or it never could.
   */
  enter(model: string, count: number, tokens = 0): void {
    const now = this.queued.get(model) ?? { requests: 0, tokens: 0 };
    const overRequests = this.maxRequests > 0 && now.requests > 0 && now.requests + count > this.maxRequests;
    const overTokens = this.maxTokens > 0 && now.requests > 0 && now.tokens + tokens > this.maxTokens;
    if (overRequests || overTokens) throw this.shed(model, now, count, tokens, overRequests);
    this.queued.set(model, { requests: now.requests + count, tokens: now.tokens + tokens });
  }

  /** One generation left the queue: its first token arrived, or it ended before one did. */
  leave(model: string, tokens = 0): void {
    this.retry.recordDrain(model);
    const now = this.queued.get(model);
    if (now === undefined || now.requests <= 1) this.queued.delete(model);
    else this.queued.set(model, { requests: now.requests - 1, tokens: Math.max(0, now.tokens - tokens) });
  }

  /** Admits one request's generations together (n choices), their prompt lengths `promptTokens`; one seat each. */
  admit(model: string, promptTokens: readonly number[]): AdmissionSeat[] {
    this.enter(
      model,
      promptTokens.length,
      promptTokens.reduce((a, b) => a + b, 0),
    );
    return promptTokens.map((tokens) => {
      let seated = true;
      return {
        leave: () => {
          if (seated) this.leave(model, tokens);
          seated = false;
        },
      };
    });
  }

  private shed(model: string, now: Backlog, count: number, tokens: number, overRequests: boolean): Overloaded {
    const advice = overRequests ? this.retry.advise(model, now.requests, count, this.maxRequests) : this.retry.book(model, this.tokensToDrain(now, tokens), Math.max(1, count));
    const what = overRequests
      ? `${now.requests} generations for model '${model}' are waiting for their first token (limit ${this.maxRequests})`
      : `the ${now.tokens} prompt tokens waiting for model '${model}' and this request's ${tokens} exceed the limit of ${this.maxTokens}`;
    return new Overloaded(`The server is overloaded: ${what}. Retry after ${advice.ms} ms.`, advice);
  }

  /** Generations that must drain before `tokens` more fit, reckoning each waiting one at the backlog's mean length. */
  private tokensToDrain(now: Backlog, tokens: number): number {
    const excess = now.tokens + Math.min(tokens, this.maxTokens) - this.maxTokens;
    return Math.max(1, Math.ceil(excess / Math.max(1, now.tokens / now.requests)));
  }
}
