// Where an engine decode step's time goes, measured on an EngineCore driven directly (inside the
// bench worker, a thread like the engine's own): ORT time, the runner's KV gather/scatter copy
// time and calls (its own stats), and the rest (feeds, logits copy, sampling, scheduling). The
// sampler is also timed alone on random rows. Runs before the interleaved cases.

import * as ort from 'onnxruntime-node';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { EngineCore } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { Sampler } from '../../../src/sampler/sampler.js';
import type { EngineWorkerData } from '../../../src/contracts/engine-messages.js';
import { GREEDY_SAMPLING } from '../../../src/contracts/generate.js';
import type { EngineBenchConfig } from './config.js';
import { benchRequest, medianOf, randomTokens } from './workload.js';

export interface StepProfile {
  readonly batch: number;
  /** Past length of the measured steps (all rows decode with the same past). */
  readonly past: number;
  readonly steps: number;
  /** Medians over the measured steps, ms. */
  readonly stepMs: number;
  readonly ortMs: number;
  readonly copyMs: number;
  readonly otherMs: number;
  /** Greedy sampling of `batch` rows alone, ms. */
  readonly samplerMs: number;
  readonly ortCalls: number;
  /** Measured steps whose past was the previous step's present (no KV gather). */
  readonly reusedPast: number;
}

const MEASURED_STEPS = 6;

export async function profileSteps(config: EngineBenchConfig, data: EngineWorkerData): Promise<StepProfile[]> {
  const core = EngineCore.create(data, await openModelRunner(data), () => {});
  const ortTimer = timeOrtRuns();
  try {
    const profiles: StepProfile[] = [];
    for (const batch of config.concurrency) profiles.push(await profileBatch(config, core, batch, ortTimer));
    return profiles;
  } finally {
    ortTimer.restore();
    await core.release();
  }
}

async function profileBatch(config: EngineBenchConfig, core: EngineCore, batch: number, ortTimer: OrtTimer): Promise<StepProfile> {
  const random = new SeededRandom(batch * 7 + 1);
  const ids = Array.from({ length: batch }, (_, i) => `profile-${batch}-${i}`);
  for (const id of ids) core.add(benchRequest(id, randomTokens(random, config.promptTokens), config.outputTokens));
  // Prefill (possibly in chunks) until every row decodes: only then is a step one decode batch.
  let decoding = 0;
  while (decoding < batch && core.hasWork()) {
    const output = await core.step();
    decoding = output.updates.filter((u) => u.numOutputTokens > 1).length;
  }
  const samples = { step: [] as number[], ort: [] as number[], copy: [] as number[], calls: [] as number[] };
  const reusedBefore = core.runnerStats.reusedPastCalls;
  for (let i = 0; i < MEASURED_STEPS && core.hasWork(); i++) {
    ortTimer.reset();
    const started = performance.now();
    await core.step();
    const stepMs = performance.now() - started;
    samples.step.push(stepMs);
    samples.ort.push(ortTimer.ms);
    samples.copy.push(core.runnerStats.lastStepCopyMs);
    samples.calls.push(core.runnerStats.lastStepCalls);
  }
  for (const id of ids) core.abort(id);
  const stepMs = medianOf(samples.step);
  const ortMs = medianOf(samples.ort);
  const copyMs = medianOf(samples.copy);
  return {
    batch,
    past: config.promptTokens + 1,
    steps: samples.step.length,
    stepMs,
    ortMs,
    copyMs,
    otherMs: Math.max(0, stepMs - ortMs - copyMs),
    samplerMs: timeSampler(core.info.shape.vocabSize, batch),
    ortCalls: medianOf(samples.calls),
    reusedPast: core.runnerStats.reusedPastCalls - reusedBefore,
  };
}

interface OrtTimer {
  readonly ms: number;
  reset(): void;
  restore(): void;
}

/**
 * Times every session.run of this thread by wrapping the prototype for the profile's duration:
 * the engine's session is private to it, and this way the engine runs unchanged.
 */
function timeOrtRuns(): OrtTimer {
  // The typings describe a factory; at run time InferenceSession is a class with run() on its prototype.
  const proto = (ort.InferenceSession as unknown as { prototype: { run: ort.InferenceSession['run'] } }).prototype;
  const original = proto.run;
  let ms = 0;
  proto.run = async function (this: ort.InferenceSession, ...args: Parameters<typeof original>) {
    const started = performance.now();
    try {
      return await original.apply(this, args);
    } finally {
      ms += performance.now() - started;
    }
  } as typeof original;
  return {
    get ms() {
      return ms;
    },
    reset: () => (ms = 0),
    restore: () => (proto.run = original),
  };
}

function timeSampler(vocabSize: number, batch: number): number {
  const sampler = new Sampler({ vocabSize });
  const rows = Array.from({ length: batch }, (_, i) => new SeededRandom(i + 1).uniformWithStd(vocabSize, 2));
  const params = GREEDY_SAMPLING;
  const times: number[] = [];
  for (let rep = 0; rep < 5; rep++) {
    const started = performance.now();
    rows.forEach((logits, i) => sampler.sample({ requestId: `s${i}`, logits, params, promptTokenIds: [1], outputTokenIds: [2], bannedTokenIds: null }));
    times.push(performance.now() - started);
  }
  return medianOf(times);
}
