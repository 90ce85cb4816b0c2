// Requests the engine benchmark sends and what it records while they stream: every update's step
// time and counters, and the engine's stats as of each step. Measurements come from the updates
// themselves (engine timestamps), so the harness's wall time and these numbers can be compared.

import { type EngineStats, type GenerateRequest, GREEDY_SAMPLING } from '../../../src/contracts/generate.js';
import type { EngineClient } from '../../../src/engine-client/engine-client.js';
import type { SeededRandom } from '../../../kernels/onnx/random.js';
import { summarize } from '../../harness/stats.js';

/** Below Qwen3's special tokens (151,643 and up), so a random prompt is ordinary text to the model. */
const ORDINARY_TOKENS = 151_643;

export function benchRequest(id: string, promptTokenIds: readonly number[], maxTokens: number): GenerateRequest {
  return {
    id,
    promptTokenIds,
    sampling: GREEDY_SAMPLING,
    priority: 0,
    cacheSalt: null,
    stop: { maxTokens, minTokens: 0, eosTokenIds: [], ignoreEos: true, stopTokenIds: [] },
  };
}

export function randomTokens(random: SeededRandom, length: number): number[] {
  return random.ints(length, ORDINARY_TOKENS);
}

/** Uniform integer in [min, max]. */
export function between(random: SeededRandom, [min, max]: readonly [number, number]): number {
  return min + (random.nextUint32() % (max - min + 1));
}

/** One update as the benchmark keeps it. */
export interface UpdatePoint {
  /** Engine time of the step that produced it. */
  readonly timeMs: number;
  readonly numOutputTokens: number;
  readonly finished: boolean;
}

export interface RequestTrace {
  readonly id: string;
  readonly numPromptTokens: number;
  readonly maxTokens: number;
  /** Main-thread time the request was submitted, and when its first update arrived there. */
  readonly submittedMs: number;
  firstSeenMs: number | null;
  readonly points: UpdatePoint[];
  numCachedTokens: number;
  /** Engine-stamped: first token applied − arrival (both on the engine's clock). */
  engineTtftMs: number | null;
}

export interface WorkloadTrace {
  readonly requests: RequestTrace[];
  /** Engine stats by step time, of every step that had an update for one of the workload's requests. */
  readonly stepStats: Map<number, EngineStats>;
  wallMs: number;
}

/** Submits every request at once and waits for all of them to finish. */
export async function runWorkload(engine: EngineClient, requests: readonly GenerateRequest[]): Promise<WorkloadTrace> {
  const trace: WorkloadTrace = { requests: [], stepStats: new Map(), wallMs: 0 };
  const ids = new Set(requests.map((r) => r.id));
  // Read from the step message itself: the streams' consumers run in turns (event-loop-turns.ts),
  // so when an update is consumed the engine's latest stats may already be a later step's.
  const stopRecording = engine.onStep((output) => {
    if (output.updates.some((u) => ids.has(u.requestId))) trace.stepStats.set(output.timeMs, output.stats);
  });
  const started = performance.now();
  try {
    await Promise.all(requests.map((request) => follow(engine, request, trace)));
  } finally {
    stopRecording();
  }
  trace.wallMs = performance.now() - started;
  return trace;
}

async function follow(engine: EngineClient, request: GenerateRequest, trace: WorkloadTrace): Promise<void> {
  const record: RequestTrace = {
    id: request.id,
    numPromptTokens: request.promptTokenIds.length,
    maxTokens: request.stop.maxTokens,
    submittedMs: performance.now(),
    firstSeenMs: null,
    points: [],
    numCachedTokens: 0,
    engineTtftMs: null,
  };
  trace.requests.push(record);
  for await (const { update, timeMs } of engine.submit(request)) {
    record.firstSeenMs ??= performance.now();
    record.points.push({ timeMs, numOutputTokens: update.numOutputTokens, finished: update.finishReason !== null });
    record.numCachedTokens = update.numCachedTokens;
    if (update.firstTokenTimeMs !== null && record.engineTtftMs === null) record.engineTtftMs = update.firstTokenTimeMs - update.arrivalTimeMs;
  }
}

export function outputTokens(trace: WorkloadTrace): number {
  return trace.requests.reduce((sum, r) => sum + (r.points.at(-1)?.numOutputTokens ?? 0), 0);
}

/**
 * Durations of the steps in which every one of `batch` requests decoded one token (no prefill
 * in the step, nobody finishing before it): the time since the previous step's message, which
 * is the step itself plus the loop's own gap. Only pure decode steps compare with a forward pass
 * of batch `batch`.
 */
export function decodeStepMs(trace: WorkloadTrace, batch: number): number[] {
  const decodesAt = new Map<number, number>();
  for (const r of trace.requests) {
    for (const p of r.points) {
      if (p.numOutputTokens > 1) decodesAt.set(p.timeMs, (decodesAt.get(p.timeMs) ?? 0) + 1);
    }
  }
  const steps = [...trace.stepStats.keys()].sort((a, b) => a - b);
  const durations: number[] = [];
  for (let i = 1; i < steps.length; i++) {
    const previous = steps[i - 1]!;
    const current = steps[i]!;
    if (decodesAt.get(current) === batch && decodesAt.get(previous) === batch) durations.push(current - previous);
  }
  return durations;
}

/** One trace of several runs; runs never overlap in time, so step times stay distinct keys. */
export function mergeTraces(traces: readonly WorkloadTrace[]): WorkloadTrace {
  return {
    requests: traces.flatMap((t) => t.requests),
    stepStats: new Map(traces.flatMap((t) => [...t.stepStats])),
    wallMs: traces.reduce((sum, t) => sum + t.wallMs, 0),
  };
}

/** NaN for no values, so a missing measurement shows as missing rather than throwing. */
export function medianOf(values: readonly number[]): number {
  return values.length === 0 ? NaN : summarize(values).median;
}
