// How long a shed generation should wait before retrying, whatever protocol it came by. A constant `retry-after` sends a whole
// burst of shed clients back at one instant (the SDKs wait exactly what they are told), where
// they are shed again. Instead each model's drain rate (generations reaching their first token
// per second) is measured, and each shed request books the next return slot after the backlog
// ahead of it has drained: a burst comes back spread at the rate the server frees room, with a
// little jitter inside each slot so clock skew between clients does not re-align them. A slot
// promised to a client that never comes back stops counting once its time has passed: the next
// shed client is booked behind the promises still ahead, never behind ones already gone by.
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
  /** Per model: the end of each return slot promised and not yet past, in booking order (and so in time order). */
  private readonly promised = new Map<string, number[]>();
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

  /** Return slots promised to shed clients whose time has not yet passed. */
  outstanding(model: string): number {
    return this.livePromises(model, this.options.now()).length;
  }

  /**
   * The wait for a request of `count` generations shed while `queued` wait and `limit` may: it
   * could be admitted once `queued + count - limit` of them have drained, and not before the
   * slots promised to requests shed earlier.
   */
  advise(model: string, queued: number, count: number, limit: number): RetryAdvice {
    return this.book(model, Math.max(1, queued + Math.min(count, limit) - limit), Math.max(1, Math.min(count, limit)));
  }

  /**
   * Books a return slot `seats` generations wide for a client that could be admitted once
   * `mustDrain` generations have drained, behind every slot still promised; the wait is a
   * random point inside it.
   */
  book(model: string, mustDrain: number, seats: number): RetryAdvice {
    const now = this.options.now();
    const slotMs = 1000 / this.drainRate(model);
    const live = this.livePromises(model, now);
    const start = Math.max(now + mustDrain * slotMs, live.at(-1) ?? 0);
    const width = seats * slotMs;
    // The book never runs further ahead than a client would wait.
    live.push(Math.min(start + width, now + MAX_RETRY_MS));
    this.promised.set(model, live);
    const at = start + this.options.random() * width;
    const ms = Math.round(Math.min(MAX_RETRY_MS, Math.max(MIN_RETRY_MS, at - now)));
    return { seconds: Math.max(1, Math.ceil(ms / 1000)), ms };
  }

  /** The model's promises, those whose time has passed dropped (their clients came back, or never will). */
  private livePromises(model: string, now: number): number[] {
    const ends = this.promised.get(model) ?? [];
    const passed = ends.findIndex((end) => end > now);
    if (passed !== 0) ends.splice(0, passed === -1 ? ends.length : passed);
    if (ends.length === 0) this.promised.delete(model);
    return ends;
  }
}
