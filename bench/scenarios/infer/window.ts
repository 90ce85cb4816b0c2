// One measurement window at a fixed concurrency, perf_analyzer style: start N closed-loop
// clients, let the queue fill (ramp), then count what completes inside a fixed window and diff the
// server's statistics across the same window, while the load is still on. What completes during
// the ramp or after the window is not counted, so start-up and draining do not dilute the point.
// After the load stops, one more request goes through the same FIFO queue: when it is back, the
// work the stopped clients left behind is done and cannot spill into the next point.
//
// A slow point (a batch of 32 can take seconds on a busy CPU) completes in lumps, so a fixed
// span may catch one lump or none. Both the ramp and the window therefore also wait for as many
// responses as there are clients (every client has gone round once: the loop is in its steady
// state, and the window holds more than one batch), up to a cap.

import { setTimeout as sleep } from 'node:timers/promises';
import { combineStats, type StatsSnapshot } from './server-stats.js';

/** Called once per finished request: its latency as the client saw it. */
export type OnResponse = (latencyMs: number, error?: string) => void;

export interface LoadHandle {
  /** Stops issuing requests; resolves once the generator has let go of them. */
  stop(): Promise<void>;
}

/** Keeps `concurrency` requests outstanding until stopped. */
export type LoadDriver = (concurrency: number, onResponse: OnResponse) => LoadHandle;

export interface WindowTiming {
  readonly rampS: number;
  readonly windowS: number;
}

/** Caps on the wait for `concurrency` responses, as multiples of windowS. */
const RAMP_CAP = 2;
const WINDOW_CAP = 3;

export interface WindowHooks {
  readonly stats: () => Promise<StatsSnapshot>;
  /** Resolves once the server has finished what was queued before it. */
  readonly settle: () => Promise<void>;
}

export interface WindowResult {
  readonly durationS: number;
  /** How long the settling request took: the backlog the stopped load left on the server. */
  readonly settleMs: number;
  readonly latenciesMs: number[];
  readonly errors: number;
  readonly firstError?: string;
  readonly server: StatsSnapshot;
}

export async function measureWindow(driver: LoadDriver, concurrency: number, timing: WindowTiming, hooks: WindowHooks): Promise<WindowResult> {
  const latenciesMs: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let open = false;
  let responses = 0;
  const load = driver(concurrency, (latencyMs, error) => {
    responses += 1;
    if (!open) return;
    if (error === undefined) {
      latenciesMs.push(latencyMs);
    } else {
      errors += 1;
      firstError ??= error;
    }
  });
  let measured: Omit<WindowResult, 'settleMs'>;
  try {
    await waitFor(timing.rampS, () => responses >= concurrency, timing.rampS + RAMP_CAP * timing.windowS);
    const before = await hooks.stats();
    open = true;
    const openedAt = performance.now();
    await waitFor(timing.windowS, () => latenciesMs.length + errors >= concurrency, WINDOW_CAP * timing.windowS);
    open = false;
    const durationS = (performance.now() - openedAt) / 1000;
    const after = await hooks.stats();
    measured = { durationS, latenciesMs, errors, ...(firstError === undefined ? {} : { firstError }), server: combineStats(before, after, -1) };
  } finally {
    await load.stop();
  }
  const settleStarted = performance.now();
  await hooks.settle();
  return { ...measured, settleMs: performance.now() - settleStarted };
}

/** At least minS, then until `done()` or maxS; polled, since responses arrive on other callbacks. */
async function waitFor(minS: number, done: () => boolean, maxS: number): Promise<void> {
  const started = performance.now();
  await sleep(minS * 1000);
  while (!done() && performance.now() - started < maxS * 1000) await sleep(20);
}
