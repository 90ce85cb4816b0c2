// A whole throughput workload driven on an EngineCore directly (prefill chunks, arrivals into the
// decode batch, decode), with the runner's time by phase summed over every step: where a point's
// wall time goes, beside the decode-only step profile.

import { SeededRandom } from '../../../kernels/onnx/random.js';
import { EngineCore } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { emptyBreakdown, type StepBreakdown } from '../../../src/runners/model-runner.js';
import type { EngineWorkerData } from '../../../src/contracts/engine-messages.js';
import type { EngineBenchConfig } from './config.js';
import { benchRequest, randomTokens } from './workload.js';

export interface WorkloadProfile {
  readonly concurrency: number;
  readonly promptTokens: number;
  readonly outputTokens: number;
  readonly wallMs: number;
  readonly steps: number;
  readonly ortCalls: number;
  /** Runner phases summed over the workload; `otherMs` is the rest of the wall (scheduling, sampling). */
  readonly breakdown: StepBreakdown;
  readonly otherMs: number;
}

export async function profileWorkload(data: EngineWorkerData, concurrency: number, promptTokens: number, outputTokens: number): Promise<WorkloadProfile> {
  const core = EngineCore.create(data, await openModelRunner(data), () => {});
  try {
    const random = new SeededRandom(concurrency * 13 + promptTokens);
    for (let i = 0; i < concurrency; i++) core.add(benchRequest(`workload-${i}`, randomTokens(random, promptTokens), outputTokens));
    const before = { ...core.runnerStats.total };
    let steps = 0;
    let ortCalls = 0;
    const started = performance.now();
    while (core.hasWork()) {
      await core.step();
      steps++;
      ortCalls += core.runnerStats.lastStepCalls;
    }
    const wallMs = performance.now() - started;
    const breakdown = emptyBreakdown();
    for (const key of Object.keys(breakdown) as (keyof StepBreakdown)[]) breakdown[key] = core.runnerStats.total[key] - before[key];
    const runnerMs = breakdown.gatherMs + breakdown.feedsMs + breakdown.ortMs + breakdown.scatterMs + breakdown.logitsMs;
    return { concurrency, promptTokens, outputTokens, wallMs, steps, ortCalls, breakdown, otherMs: Math.max(0, wallMs - runnerMs) };
  } finally {
    await core.release();
  }
}

/** The context sweep: every (prompt length, concurrency) pair of the config, one fresh EngineCore each. */
export async function sweepWorkloads(config: EngineBenchConfig, data: EngineWorkerData): Promise<WorkloadProfile[]> {
  const profiles: WorkloadProfile[] = [];
  for (const prompt of config.sweep) {
    for (const concurrency of config.concurrency) profiles.push(await profileWorkload(data, concurrency, prompt, config.outputTokens));
  }
  return profiles;
}
