// A whole throughput workload driven on an EngineCore directly (prefill chunks, arrivals into the
// decode batch, decode), with the runner's time by phase summed over every step: where a point's
// wall time goes, beside the decode-only step profile; the context sweep (context-sweep.ts) runs
// one per runner and point, and the forward floor of the same work.

import { SeededRandom } from '../../../kernels/onnx/random.js';
import { EngineCore } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { emptyBreakdown, type RunnerKind, runnerPhasesMs, type StepBreakdown } from '../../../src/runners/model-runner.js';
import type { EngineWorkerData } from '../../../src/contracts/engine-messages.js';
import type { StepShape } from '../forward/feeds.js';
import type { EngineBenchConfig } from './config.js';
import { benchRequest, randomTokens } from './workload.js';

export interface WorkloadProfile {
  readonly runner: RunnerKind;
  readonly concurrency: number;
  readonly promptTokens: number;
  readonly outputTokens: number;
  readonly wallMs: number;
  readonly steps: number;
  readonly ortCalls: number;
  /** Runner phases summed over the workload; `otherMs` is the rest of the wall (scheduling, sampling). */
  readonly breakdown: StepBreakdown;
  readonly otherMs: number;
  /**
   * The decode phase: the steps after every request has its first token (all submitted at once,
   * so from then on each step is one decode batch), their wall time and the tokens they emitted.
   */
  readonly decodeMs: number;
  readonly decodeTokens: number;
  /**
   * The decode steps in which every request of the workload emitted a token (all `concurrency`
   * streams decoding): their count and summed wall time. The decode phase above also holds the
   * tail in which the batch drains as requests finish; with long prompts that tail is long —
   * prefill chunks of one prompt a step stagger the first tokens by a step each, so at 2,048-token
   * prompts and 32 streams half of a 64-token decode phase runs on fewer than 32 — while at short
   * prompts there is almost none. This is the rate at the batch the forward floor runs.
   */
  readonly fullBatchSteps: number;
  readonly fullBatchMs: number;
}

/**
 * Untimed, on the fresh core: `concurrency` short requests decoding together for a dozen steps.
 * A new ONNX Runtime session's first calls of a batch size run several times slower (thread pool,
 * arena, first touches of the weights); a server's engine is long warm, and so is the floor's
 * session, so a workload timed cold would charge the runner for what a served request never pays.
 */
const WARM_UP = { promptTokens: 16, outputTokens: 12 } as const;

async function warmUp(core: EngineCore, concurrency: number, random: SeededRandom): Promise<void> {
  for (let i = 0; i < concurrency; i++) core.add(benchRequest(`warm-up-${i}`, randomTokens(random, WARM_UP.promptTokens), WARM_UP.outputTokens));
  while (core.hasWork()) await core.step();
}

export async function profileWorkload(data: EngineWorkerData, concurrency: number, promptTokens: number, outputTokens: number): Promise<WorkloadProfile> {
  const core = EngineCore.create(data, await openModelRunner(data), () => {});
  try {
    const random = new SeededRandom(concurrency * 13 + promptTokens);
    await warmUp(core, concurrency, random);
    for (let i = 0; i < concurrency; i++) core.add(benchRequest(`workload-${i}`, randomTokens(random, promptTokens), outputTokens));
    const before = { ...core.runnerStats.total };
    let steps = 0;
    let ortCalls = 0;
    const started = performance.now();
    const firstTokens = new Set<string>();
    let decodeStart: number | null = null;
    let decodeTokens = 0;
    let fullBatchSteps = 0;
    let fullBatchMs = 0;
    while (core.hasWork()) {
      const stepStarted = performance.now();
      const output = await core.step();
      const stepMs = performance.now() - stepStarted;
      steps++;
      ortCalls += core.runnerStats.lastStepCalls;
      if (decodeStart !== null) {
        const emitted = output.updates.filter((u) => u.newTokenIds.length > 0).length;
        decodeTokens += output.updates.reduce((sum, u) => sum + u.newTokenIds.length, 0);
        if (emitted === concurrency) {
          fullBatchSteps++;
          fullBatchMs += stepMs;
        }
      }
      for (const u of output.updates) firstTokens.add(u.requestId);
      if (decodeStart === null && firstTokens.size === concurrency) decodeStart = performance.now();
    }
    const wallMs = performance.now() - started;
    const breakdown = emptyBreakdown();
    for (const key of Object.keys(breakdown) as (keyof StepBreakdown)[]) breakdown[key] = core.runnerStats.total[key] - before[key];
    const runnerMs = runnerPhasesMs(breakdown);
    const decodeMs = decodeStart === null ? 0 : started + wallMs - decodeStart;
    return {
      runner: core.info.kind,
      concurrency,
      promptTokens,
      outputTokens,
      wallMs,
      steps,
      ortCalls,
      breakdown,
      otherMs: Math.max(0, wallMs - runnerMs),
      decodeMs,
      decodeTokens,
      fullBatchSteps,
      fullBatchMs,
    };
  } finally {
    await core.release();
  }
}

/**
 * The bare Optimum forward pass of one sweep point's work: its prefill calls (prompts packed as
 * max_num_batched_tokens admits, no past) and `outputTokens` decode steps at the middle past.
 */
export interface ForwardFloor {
  readonly concurrency: number;
  readonly promptTokens: number;
  readonly decodeMs: number;
  readonly prefillMs: number;
  readonly prefillCalls: number;
  /** prefillCalls × prefillMs + outputTokens × decodeMs. */
  readonly workloadMs: number;
}

/** Median ms of a few bare forward calls of a shape (the worker owns the Optimum session). */
export type TimeForward = (shape: StepShape) => Promise<number>;

export async function forwardFloor(config: EngineBenchConfig, concurrency: number, promptTokens: number, timeForward: TimeForward): Promise<ForwardFloor> {
  const rows = Math.max(1, Math.min(concurrency, Math.floor(config.maxNumBatchedTokens / promptTokens)));
  const prefillCalls = Math.ceil(concurrency / rows);
  const prefillMs = await timeForward({ batch: rows, past: 0, seq: promptTokens });
  const decodeMs = await timeForward({ batch: concurrency, past: promptTokens + Math.floor(config.outputTokens / 2), seq: 1 });
  return { concurrency, promptTokens, decodeMs, prefillMs, prefillCalls, workloadMs: prefillCalls * prefillMs + config.outputTokens * decodeMs };
}
