// How long a shed request should wait before retrying. A constant `retry-after` sends a whole
// burst of shed clients back at one instant (the SDKs wait exactly what they are told), where
// they are shed again. Instead each model's drain rate (generations reaching their first token
// per second) is measured, and each shed request books the next return slot after the backlog
// ahead of it has drained: a burst comes back spread at the rate the server frees room, with a
// little jitter inside each slot so clock skew between clients does not re-align them.
// Pure policy: the clock and the random source are injected.

export interface RetryAdvice {
  /** `retry-after`: whole seconds, at least 1 (what HTTP defines and every client reads). */
  readonly seconds: number;
  /** `retry-after-ms`: the same wait in milliseconds, which OpenAI's SDKs read first. */
  readonly ms: number;
}

export interface RetryAfterOptions {
  /** Monotonic milliseconds. */
  readonly now: () => number;
  /** Uniform in [0, 1). */
  readonly random: () => number;
  /** Drain rate assumed before anything has drained (generations per second). */
  readonly initialRate?: number;
  /** Departures the rate is measured over. */
  readonly window?: number;
}

/** OpenAI's SDKs ignore a wait above 60 s (and fall back to their own backoff). */
export const MAX_RETRY_MS = 60_000;
const MIN_RETRY_MS = 50;

class DrainMeter {
  private readonly times: number[] = [];
  constructor(private readonly window: number) {}

  record(at: number): void {
    this.times.push(at);
    if (this.times.length > this.window) this.times.shift();
  }

  /** Generations per second over the recent departures; null until two are seen apart in time. */
  rate(): number | null {
    const n = this.times.length;
    if (n < 2) return null;
    const span = this.times[n - 1]! - this.times[0]!;
    return span > 0 ? ((n - 1) * 1000) / span : null;
  }
}

export class RetryAfterPolicy {
  private readonly meters = new Map<string, DrainMeter>();
  /** Per model: the earliest time not yet booked by an earlier shed request. */
  private readonly booked = new Map<string, number>();
  private lastRate: number;

  constructor(private readonly options: RetryAfterOptions) {
    this.lastRate = options.initialRate ?? 4;
  }

  /** One generation of `model` left the queue (its first token arrived). */
  recordDrain(model: string): void {
    let meter = this.meters.get(model);
    if (meter === undefined) {
      meter = new DrainMeter(this.options.window ?? 32);
      this.meters.set(model, meter);
    }
    meter.record(this.options.now());
  }

  drainRate(model: string): number {
    const rate = this.meters.get(model)?.rate() ?? null;
    if (rate !== null) this.lastRate = rate;
    return rate ?? this.lastRate;
  }

  /**
   * The wait for a request of `count` generations shed while `queued` wait and `limit` may: it
   * could be admitted once `queued + count - limit` of them have drained, and not before the
   * slots booked by requests shed earlier.
   */
  advise(model: string, queued: number, count: number, limit: number): RetryAdvice {
    const now = this.options.now();
    const slotMs = 1000 / this.drainRate(model);
    const mustDrain = Math.max(1, queued + Math.min(count, limit) - limit);
    const start = Math.max(now + mustDrain * slotMs, this.booked.get(model) ?? 0);
    const width = Math.max(1, Math.min(count, limit)) * slotMs;
    // Clients that never come back leave holes; the book never runs further ahead than a client would wait.
    this.booked.set(model, Math.min(start + width, now + MAX_RETRY_MS));
    const at = start + this.options.random() * width;
    const ms = Math.round(Math.min(MAX_RETRY_MS, Math.max(MIN_RETRY_MS, at - now)));
    return { seconds: Math.max(1, Math.ceil(ms / 1000)), ms };
  }
}
