// `npm run bench -- engine`: the LLM engine on the bench decoder, in one interleaved run —
// aggregate output tokens/s at several concurrencies, batched vs the same engine with
// max_num_seqs 1; the bare forward pass at the same decode shapes (the floor); time to first
// token behind a shared prefix with prefix caching on vs off; KV blocks wasted on a mixed
// workload. Engines run in their worker threads exactly as the server runs them.

import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { pagedVariantFile } from '../../../src/repository/variants.js';
import { pagedSegmentsDir } from '../../../src/contracts/paged-segments.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { ensureBuilt, type BuiltModel } from '../../../models/catalog.js';
import { EngineClient } from '../../../src/engine-client/engine-client.js';
import type { EngineWorkerData } from '../../../src/contracts/engine-messages.js';
import { messageOf } from '../../harness/runner.js';
import type { PreparedScenario, Scenario, ScenarioContext } from '../../harness/scenario.js';
import type { BenchCase, CaseResult } from '../../harness/types.js';
import { BenchWorker } from './bench-worker-client.js';
import { GROUP, SEED, VARIANT, floorCases, floorShapes, kvCase, seedPrefix, throughputCases, ttftCases, type Engines, type Observations, type StepTimes } from './cases.js';
import { ENGINE_FLAGS, engineBenchConfig, engineData, type EngineBenchConfig } from './config.js';
import type { StepProfile } from './profile.js';
import { SWEEP_RUNNERS, type SweepObservations, type SweepRunner, type SweepVariant, sweepCases, sweepChart } from './context-sweep.js';
import type { WeightPrecision } from '../../../kernels/linear.js';
import * as ort from 'onnxruntime-node';
import { decoderQuality, QUALITY_POSITIONS, type VariantQuality } from '../forward/quality.js';
import { conclude, engineCharts } from './report.js';
import { benchRequest, randomTokens, runWorkload } from './workload.js';
import { ensureCopier } from './copier.js';
import { pagedModelOf, prepareSpeculation } from './speculation.js';

/** How the scenario gets the decoder; tests may pass another source. */
export type DecoderSource = (size: EngineBenchConfig['size']) => Promise<Pick<BuiltModel, 'modelPath'>>;

export function engineScenario(source: DecoderSource = (size) => ensureBuilt('qwen3', size)): Scenario {
  return {
    name: 'engine',
    description: 'LLM engine: batched vs max_num_seqs 1 throughput against the forward floor, prefix-cache TTFT, KV waste',
    flags: ENGINE_FLAGS,
    // A full run is minutes of CPU per repetition; the engines are warmed in prepare() instead.
    defaults: { full: { reps: 2, warmup: 0 }, quick: { reps: 1, warmup: 0 }, baseline: VARIANT.serial },
    prepare: (context) => prepareEngine(source, context),
  };
}

async function prepareEngine(source: DecoderSource, context: ScenarioContext): Promise<PreparedScenario> {
  const config = engineBenchConfig(context.flags, context.quick);
  if (config.speculation) {
    if (config.copier) {
      const draftDir = config.copierDraft ? await ensureCopier('draft', context.log) : config.draftDir;
      const modelDir = await ensureCopier('target', context.log);
      return prepareSpeculation({ ...config, draftDir }, pagedModelOf(join(modelDir, 'onnx', 'model.onnx')), 'copier', context);
    }
    if (config.modelDir) return prepareSpeculation(config, pagedModelOf(join(config.modelDir, 'onnx', 'model.onnx')), basename(config.modelDir), context);
    context.log(`building qwen3 ${config.size}…`);
    return prepareSpeculation(config, pagedModelOf((await source(config.size)).modelPath(config.precision)), `qwen3 ${config.size} ${config.precision}`, context);
  }
  const loadAtStart = loadavg();
  context.log(`building qwen3 ${config.size}…`);
  const built = await source(config.size);
  const modelPath = built.modelPath(config.precision);
  const data = (overrides: Partial<EngineWorkerData>) => engineData(config, modelPath, overrides);
  const configs = { batched: data({}), serial: data({ maxNumSeqs: 1 }), cacheOn: data({}), cacheOff: data({ enablePrefixCaching: false }) };
  const variants = config.sweep.length > 0 ? config.precisions.map((precision) => sweepVariantOf(config, built.modelPath(precision), precision, context.log)) : [];
  const quality = variants.length > 1 ? await qualityAgainstFp32(built, config.precisions, context.log) : new Map<WeightPrecision, VariantQuality>();
  context.log(config.sweepOnly ? 'starting the floor worker…' : 'starting 4 engines and the floor worker…');
  const { engines, worker, dispose } = await startAll(config, modelPath, config.sweepOnly ? null : configs, context.log);
  try {
    let steps: StepProfile[] = [];
    if (config.profile && !config.sweepOnly) {
      context.log('profiling the decode step (EngineCore in the floor worker)…');
      steps = await worker.profile(config, configs.batched);
    }
    const observed = { traces: new Map() as Observations, stepTimes: new Map() as StepTimes, sweep: new Map() as SweepObservations };
    const sweep = sweepCases(config, worker, variants, observed.sweep);
    let cases = sweep;
    if (engines) {
      await worker.prepareFloor(floorShapes(config));
      cases = [
        ...byPoint(throughputCases(config, engines, observed.traces), floorCases(config, worker, observed.stepTimes)),
        ...ttftCases(config, engines, observed.traces),
        kvCase(config, engines.batched, observed.traces),
        ...sweep,
      ];
      context.log('warming the engines and seeding the shared prefix…');
      await warmUp(config, engines);
    }
    // ORT's first dozen or so calls of a batch size run several times slower (measured on this
    // machine), so each floor shape is warmed twice over before anything is timed.
    for (const c of cases.filter((c) => c.group === GROUP.forward)) for (let i = 0; i < 2; i++) await c.run({ warmup: true, rep: 0 });
    return {
      cases,
      skipped: [],
      charts: [...(config.sweepOnly ? [] : engineCharts(config, `qwen3 ${config.size}`)), ...(config.sweep.length > 0 ? [sweepChart(config, `qwen3 ${config.size}`)] : [])],
      notes: engines ? notesFor(config, engines, loadAtStart) : sweepNotes(config, loadAtStart),
      settings: {
        ...config,
        modelPath,
        sweepModelPaths: Object.fromEntries(variants.map((v) => [v.precision, Object.fromEntries(Object.entries(v.runners).map(([key, d]) => [key, d?.modelPath ?? null]))])),
        ...(engines ? { numBlocks: engines.batched.info.numBlocks } : {}),
        batchedMaxNumSeqs: configs.batched.maxNumSeqs,
      },
      conclude: (results: readonly CaseResult[]) => {
        const conclusion = conclude(results, observed, config, steps, VARIANT.serial, observed.sweep, quality);
        const load = loadavg()
          .map((x) => x.toFixed(2))
          .join(' / ');
        const notes = [...conclusion.notes, `load average (1/5/15 min) at the end: ${load} on ${config.threads} threads`];
        if (config.size !== 'bench') notes.push(`the targets are set for the bench decoder; on the ${config.size} one they only show the pipeline works`);
        return { ...conclusion, notes };
      },
      dispose,
    };
  } catch (error) {
    await dispose();
    throw new Error(`engine benchmark setup failed: ${messageOf(error)}`);
  }
}

/** Teacher-forced logits of each compared variant against fp32's, once before anything is timed. */
async function qualityAgainstFp32(built: Pick<BuiltModel, 'modelPath'>, precisions: readonly WeightPrecision[], log: (line: string) => void): Promise<Map<WeightPrecision, VariantQuality>> {
  const quality = new Map<WeightPrecision, VariantQuality>();
  const compared = precisions.filter((p) => p !== 'fp32');
  if (compared.length === 0) return quality;
  log(`quality of ${compared.join(', ')} against fp32 (${QUALITY_POSITIONS} teacher-forced positions)…`);
  const open = (precision: WeightPrecision) => ort.InferenceSession.create(built.modelPath(precision), { logSeverityLevel: 3 });
  const reference = await open('fp32');
  try {
    for (const precision of compared) {
      const candidate = await open(precision);
      quality.set(precision, await decoderQuality(reference, candidate, QUALITY_POSITIONS));
      await candidate.release();
    }
  } finally {
    await reference.release();
  }
  return quality;
}

/** One precision's sweep engines: the Optimum model, the paged graph beside it and its segments, as the build wrote them. */
function sweepVariantOf(config: EngineBenchConfig, modelPath: string, precision: WeightPrecision, log: (line: string) => void): SweepVariant {
  const data = (overrides: Partial<EngineWorkerData>) => engineData(config, modelPath, overrides);
  const pagedPath = join(dirname(modelPath), pagedVariantFile(basename(modelPath)));
  const paged = existsSync(pagedPath) ? data({ modelPath: pagedPath }) : null;
  if (!paged) log(`no ${pagedPath}: the ${precision} sweep runs the PastKeyValuesRunner only`);
  const segmentsPath = pagedSegmentsDir(pagedPath);
  const native = existsSync(segmentsPath) ? data({ modelPath: segmentsPath }) : null;
  if (!native) log(`no ${segmentsPath}: the ${precision} sweep runs no NativePagedRunner`);
  const available: Record<SweepRunner, EngineWorkerData | null> = {
    pastKeyValues: data({}),
    paged,
    native,
    nativeHalfKv: native ? data({ modelPath: segmentsPath, kvCacheDtype: 'fp16' }) : null,
    nativeInt8Kv: native ? data({ modelPath: segmentsPath, kvCacheDtype: 'int8' }) : null,
  };
  const runners = Object.fromEntries(SWEEP_RUNNERS.map((key) => [key, config.sweepRunners.includes(key) ? available[key] : null])) as Record<SweepRunner, EngineWorkerData | null>;
  return { precision, runners, floorModelPath: modelPath };
}

/** The four engines (none for a sweep-only run) and the floor worker, each in its own thread; on failure, whatever started is closed. */
async function startAll(config: EngineBenchConfig, modelPath: string, configs: Record<keyof Engines, EngineWorkerData> | null, log: (line: string) => void) {
  const started: EngineClient[] = [];
  const worker = BenchWorker.start({ modelPath, threads: config.threads, seed: SEED });
  const dispose = async (): Promise<void> => {
    await Promise.all([...started.map((e) => e.close().catch(() => {})), worker.close()]);
  };
  try {
    if (!configs) return { engines: null, worker, dispose };
    const start = async (key: keyof Engines) => {
      const engine = await EngineClient.start(configs[key], (line) => log(`[engine] ${line}`));
      started.push(engine);
      return [key, engine] as const;
    };
    const engines = Object.fromEntries(await Promise.all((['batched', 'serial', 'cacheOn', 'cacheOff'] as const).map(start))) as unknown as Engines;
    return { engines, worker, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/**
 * Each concurrency's floor calls between its batched and max_num_seqs=1 runs: the numbers a ratio
 * compares are taken close together in time, under the same load from the rest of the machine.
 */
function byPoint(throughput: readonly BenchCase[], floor: readonly BenchCase[]): BenchCase[] {
  const ordered: BenchCase[] = [];
  const placed = new Set<BenchCase>();
  for (const c of throughput) {
    ordered.push(c);
    if (c.variant !== VARIANT.batched) continue;
    const batch = Number(c.params['concurrency']);
    for (const f of floor) {
      if (placed.has(f) || Number(f.params['batch']) > batch) continue;
      ordered.push(f);
      placed.add(f);
    }
  }
  return [...ordered, ...floor.filter((f) => !placed.has(f))];
}

/** Every engine runs the shapes it will be timed on once, so ORT's arenas and threads are warm. */
async function warmUp(config: EngineBenchConfig, engines: Engines): Promise<void> {
  const random = new SeededRandom(7);
  const batch = (name: string, count: number) => Array.from({ length: count }, (_, i) => benchRequest(`warm-${name}-${i}`, randomTokens(random, config.promptTokens), 4));
  await runWorkload(engines.batched, batch('batched', Math.max(...config.concurrency)));
  await runWorkload(engines.serial, batch('serial', 2));
  await seedPrefix(config, engines.cacheOn, 'on');
  await seedPrefix(config, engines.cacheOff, 'off');
}

function sweepNotes(config: EngineBenchConfig, load: readonly number[]): string[] {
  return [
    `context sweep: at each prompt length (${config.sweep.join(', ')}) and concurrency (${config.concurrency.join(', ')}), every request submitted at once to a fresh EngineCore in the bench worker, random prompts, ${config.outputTokens} output tokens, greedy, ignore_eos (the paged runners take these plain greedy rows' tokens from the model's greedy head, kernels/greedy-tokens.ts: no logits leave ORT; the PastKeyValuesRunner and the floor fetch the logits); tok/s = output tokens / the workload's own wall time (prefill included); max_num_batched_tokens ${config.maxNumBatchedTokens}, ${config.threads} intra-op threads`,
    `forward floor: bare Optimum session.run of the same work — the prefill calls (prompts per call as max_num_batched_tokens admits) and ${config.outputTokens} decode steps at the middle past, medians of 3 calls each`,
    `load average (1/5/15 min) at the start: ${load.map((x) => x.toFixed(2)).join(' / ')} on ${config.threads} threads`,
  ];
}

function notesFor(config: EngineBenchConfig, engines: Engines, load: readonly number[]): string[] {
  const { info } = engines.batched;
  const floorPast = config.promptTokens + Math.floor(config.outputTokens / 2);
  return [
    `decoder: ${info.numLayers} layers, ${info.numKvHeads} KV heads × head_dim ${info.headDim}, vocab ${info.vocabSize.toLocaleString('en-US')}, ${info.kvType} KV; ${info.numBlocks} blocks of ${info.blockSize} tokens per engine`,
    `engines: max_num_seqs ${Math.max(...config.concurrency, config.mixedRequests)} (batched) vs 1, max_num_batched_tokens ${config.maxNumBatchedTokens}, max_model_len ${config.maxModelLen}, ${config.threads} intra-op threads, each in its own worker`,
    `throughput: every request of a point submitted at once, random prompts of ${config.promptTokens} tokens, ${config.outputTokens} output tokens, greedy, ignore_eos; tok/s = output tokens / wall time of the whole point (prefill included)`,
    `forward floor: bare session.run (forward scenario feeds) of one decode step at past ${floorPast} (the middle of the engine's decode pasts), ${config.floorSteps} calls per run, and of each point's prefill call (prompts per call as max_num_batched_tokens admits); floor = the median single call; forward-only = those calls alone for a whole point; engine step = median time between consecutive step messages in which every request decoded`,
    `TTFT: ${config.ttftRequests} requests per run, one at a time, each the same ${config.prefixTokens}-token prefix (seeded by earlier requests in warm-up) + ${config.suffixTokens} fresh tokens, max_tokens 1; client TTFT = submit → first update on the main thread`,
    `KV waste: engine stats (numTotalBlocks − numFreeBlocks) sampled at every step of the mixed workload (prompts ${config.mixedPrompt.join('–')}, outputs ${config.mixedOutput.join('–')} tokens), against tokens stored = prompt + outputs − 1 per running request from the updates; steps with a request waiting or mid-prefill are skipped`,
    `load average (1/5/15 min) at the start: ${load.map((x) => x.toFixed(2)).join(' / ')} on ${config.threads} threads`,
  ];
}
