// When a crashed worker (LLM engine or model instance) is started again, and when the crashes
// are a loop to give up on. Pure: the crash history and the time come in, a decision goes out;
// the supervisor (worker-supervisor.ts) owns the timers. Every supervision constant is here.

export interface RestartPolicy {
  /** Delay before the first restart after a quiet period, ms. */
  readonly initialBackoffMs: number;
  /** Each further crash within the window multiplies the delay by this. */
  readonly backoffFactor: number;
  /** The delay never exceeds this, ms. */
  readonly maxBackoffMs: number;
  /** This many crashes within `windowMs` is a crash loop: the model becomes UNAVAILABLE. */
  readonly maxCrashesInWindow: number;
  /** Crashes older than this are forgotten (the backoff starts over), ms. */
  readonly windowMs: number;
}

/** 0.5 s, 1 s, 2 s, 4 s, then a 5th crash within a minute is a loop. */
export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  initialBackoffMs: 500,
  backoffFactor: 2,
  maxBackoffMs: 30_000,
  maxCrashesInWindow: 5,
  windowMs: 60_000,
};

export type RestartDecision =
  | { readonly kind: 'restart'; readonly delayMs: number; readonly crashesInWindow: number }
  | { readonly kind: 'give_up'; readonly crashesInWindow: number; readonly reason: string };

export interface CrashRecord {
  /** The crash times within the window, oldest first (ms, any monotonic clock). */
  readonly crashTimesMs: readonly number[];
  readonly decision: RestartDecision;
}

/** Records a crash at `nowMs` on top of `previous` crash times and decides what follows. */
export function recordCrash(policy: RestartPolicy, previous: readonly number[], nowMs: number): CrashRecord {
  const crashTimesMs = [...previous.filter((t) => nowMs - t < policy.windowMs), nowMs];
  const crashesInWindow = crashTimesMs.length;
  if (crashesInWindow >= policy.maxCrashesInWindow) {
    const reason = `crash loop: ${crashesInWindow} crashes within ${formatSeconds(policy.windowMs)}`;
    return { crashTimesMs, decision: { kind: 'give_up', crashesInWindow, reason } };
  }
  return { crashTimesMs, decision: { kind: 'restart', delayMs: backoffMs(policy, crashesInWindow), crashesInWindow } };
}

/** The delay before restarting after the `crashesInWindow`-th recent crash (1-based). */
export function backoffMs(policy: RestartPolicy, crashesInWindow: number): number {
  const exponent = Math.max(0, crashesInWindow - 1);
  return Math.min(policy.maxBackoffMs, policy.initialBackoffMs * policy.backoffFactor ** exponent);
}

function formatSeconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}
