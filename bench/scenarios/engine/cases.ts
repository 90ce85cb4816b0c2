// The timed cases of the engine benchmark. Each run sends fresh random prompts (a new seed per
// run), so a repeated run never hits the prefix cache by accident; the TTFT cases share their
// prefix on purpose. What a run observes beyond its wall time is kept in `Observations`.

import { SeededRandom, seedFor } from '../../../kernels/onnx/random.js';
import type { EngineClient } from '../../../src/engine-client/engine-client.js';
import { caseId, type BenchCase } from '../../harness/types.js';
import type { BenchWorker, FloorShape } from './bench-worker-client.js';
import type { EngineBenchConfig } from './config.js';
import { benchRequest, between, mergeTraces, randomTokens, runWorkload, type WorkloadTrace } from './workload.js';

export const SEED = 20_240_917;

export const VARIANT = { batched: 'batched', serial: 'max_num_seqs=1', floor: 'forward floor', cacheOn: 'prefix cache on', cacheOff: 'prefix cache off' } as const;
export const GROUP = { throughput: 'throughput', forward: 'forward', ttft: 'ttft', kv: 'kv' } as const;

/** Which turn a run is (the harness passes it where it can; warm-up runs are not observed). */
type Slot = { readonly warmup?: boolean } | undefined;

/** Traces of the measured runs, by case id. */
export type Observations = Map<string, WorkloadTrace[]>;

/** Each measured forward call's time (ms), by floor case id. */
export type StepTimes = Map<string, number[]>;

export interface Engines {
  readonly batched: EngineClient;
  readonly serial: EngineClient;
  readonly cacheOn: EngineClient;
  readonly cacheOff: EngineClient;
}

export function throughputCases(config: EngineBenchConfig, engines: Engines, observations: Observations): BenchCase[] {
  return config.concurrency.flatMap((concurrency) =>
    (
      [
        ['batched', engines.batched],
        ['serial', engines.serial],
      ] as const
    ).map(([key, engine]) => {
      const info = {
        group: GROUP.throughput,
        variant: VARIANT[key],
        point: `c${concurrency}`,
        params: { concurrency, promptTokens: config.promptTokens, outputTokens: config.outputTokens },
        work: { count: concurrency * config.outputTokens, unit: 'tok' },
      };
      let run = 0;
      const requestsFor = () => {
        const random = new SeededRandom(seedFor(SEED, `${info.variant}/${info.point}/${run++}`));
        return Array.from({ length: concurrency }, (_, i) => benchRequest(`${key}-c${concurrency}-${run}-${i}`, randomTokens(random, config.promptTokens), config.outputTokens));
      };
      return { ...info, run: (slot?: Slot) => observe(observations, info, slot, runWorkload(engine, requestsFor())) };
    }),
  );
}

/**
 * Bare session.run at the shapes the engine runs (forward scenario feeds): decode steps at every
 * concurrency, and the prefill calls a point starts with (as many prompts per call as
 * max_num_batched_tokens admits), so a point's forward-only time can be put together.
 */
export function floorShapes(config: EngineBenchConfig): (FloorShape & { phase: string; calls: number })[] {
  // The engine's decode steps see past lengths prompt .. prompt + output − 1; the floor takes the middle.
  const past = config.promptTokens + Math.floor(config.outputTokens / 2);
  const decode = config.concurrency.map((batch) => ({ point: `decode b${batch}`, phase: 'decode', batch, past, seq: 1, calls: config.floorSteps }));
  const prefillRows = [...new Set(config.concurrency.map((c) => prefillRowsFor(config, c)))];
  const prefill = prefillRows.map((batch) => ({ point: `prefill ${batch}×${config.promptTokens}`, phase: 'prefill', batch, past: 0, seq: config.promptTokens, calls: 1 }));
  return [...decode, ...prefill];
}

/** The floor's cases: each run asks the bench worker for its calls and keeps their times. */
export function floorCases(config: EngineBenchConfig, worker: BenchWorker, stepTimes: StepTimes): BenchCase[] {
  return floorShapes(config).map(({ point, phase, batch, past, seq, calls }) => {
    const info = {
      group: GROUP.forward,
      variant: VARIANT.floor,
      point,
      params: { phase, batch, past, seq, stepsPerRun: calls },
      work: { count: batch * seq * calls, unit: 'tok' },
    };
    const times: number[] = [];
    stepTimes.set(caseId(info), times);
    return {
      ...info,
      run: async (slot?: Slot) => {
        const measured = await worker.floor(point, calls);
        if (!slot?.warmup) times.push(...measured);
      },
    };
  });
}

/** Prompts per prefill call when `concurrency` requests arrive at once: the token budget decides. */
export function prefillRowsFor(config: EngineBenchConfig, concurrency: number): number {
  return Math.max(1, Math.min(concurrency, Math.floor(config.maxNumBatchedTokens / config.promptTokens)));
}

/** The shared prefix of the TTFT cases: the same tokens on both engines. */
export function sharedPrefix(config: EngineBenchConfig): number[] {
  return randomTokens(new SeededRandom(seedFor(SEED, 'prefix')), config.prefixTokens);
}

/** Requests that put the shared prefix in the cache (prefix caching on) before anything is timed. */
export async function seedPrefix(config: EngineBenchConfig, engine: EngineClient, name: string): Promise<void> {
  const random = new SeededRandom(seedFor(SEED, `seed-${name}`));
  const prefix = sharedPrefix(config);
  for (let i = 0; i < 2; i++) {
    await runWorkload(engine, [benchRequest(`${name}-seed-${i}`, [...prefix, ...randomTokens(random, config.suffixTokens)], 4)]);
  }
}

/** One request after another, each the shared prefix plus a fresh suffix, one output token each. */
export function ttftCases(config: EngineBenchConfig, engines: Engines, observations: Observations): BenchCase[] {
  const prefix = sharedPrefix(config);
  return (['cacheOn', 'cacheOff'] as const).map((key) => {
    const info = {
      group: GROUP.ttft,
      variant: VARIANT[key],
      point: `prefix ${config.prefixTokens}`,
      params: { prefixTokens: config.prefixTokens, suffixTokens: config.suffixTokens, requestsPerRun: config.ttftRequests },
      work: { count: config.ttftRequests, unit: 'req' },
    };
    let run = 0;
    return {
      ...info,
      run: (slot?: Slot) => {
        const random = new SeededRandom(seedFor(SEED, `ttft-${run++}`));
        const traces = (async () => {
          const all: WorkloadTrace[] = [];
          for (let i = 0; i < config.ttftRequests; i++) {
            const prompt = [...prefix, ...randomTokens(random, config.suffixTokens)];
            all.push(await runWorkload(engines[key], [benchRequest(`${key}-ttft-${run}-${i}`, prompt, 1)]));
          }
          return mergeTraces(all);
        })();
        return observe(observations, info, slot, traces);
      },
    };
  });
}

/** Mixed prompt and output lengths, all at once on the batched engine: the KV waste workload. */
export function kvCase(config: EngineBenchConfig, engine: EngineClient, observations: Observations): BenchCase {
  // The same lengths every run (so the work is constant), fresh tokens each run.
  const random = new SeededRandom(seedFor(SEED, 'mixed-lengths'));
  const lengths = Array.from({ length: config.mixedRequests }, () => ({ prompt: between(random, config.mixedPrompt), output: between(random, config.mixedOutput) }));
  const outputs = lengths.reduce((sum, l) => sum + l.output, 0);
  const info = {
    group: GROUP.kv,
    variant: VARIANT.batched,
    point: `mixed ${config.mixedRequests}`,
    params: { requests: config.mixedRequests, promptRange: config.mixedPrompt.join('-'), outputRange: config.mixedOutput.join('-') },
    work: { count: outputs, unit: 'tok' },
  };
  let run = 0;
  return {
    ...info,
    run: (slot?: Slot) => {
      const tokens = new SeededRandom(seedFor(SEED, `mixed-tokens-${run}`));
      const requests = lengths.map((l, i) => benchRequest(`mixed-${run}-${i}`, randomTokens(tokens, l.prompt), l.output));
      run++;
      return observe(observations, info, slot, runWorkload(engine, requests));
    },
  };
}

async function observe(observations: Observations, info: Pick<BenchCase, 'group' | 'variant' | 'point'>, slot: Slot, trace: Promise<WorkloadTrace>): Promise<void> {
  const result = await trace;
  if (slot?.warmup) return;
  const id = caseId(info);
  observations.set(id, [...(observations.get(id) ?? []), result]);
}
