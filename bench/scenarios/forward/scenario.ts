// `npm run bench -- forward`: the bare onnxruntime-node forward time of the bench models, one
// session per model and inputs built in advance. This is the floor: the engine adds scheduling,
// KV gathering and sampling on top, and is measured against these numbers.

import { existsSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { relative } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { WeightPrecision } from '../../../kernels/linear.js';
import { ensureBuilt, type BuiltModel, type ModelFamily } from '../../../models/catalog.js';
import { DECODER_PRECISIONS, type ModelSize } from '../../../models/common/model-files.js';
import { intList, positiveInt, stringList } from '../../harness/args.js';
import type { ChartRequest } from '../../harness/charts.js';
import { messageOf } from '../../harness/runner.js';
import type { FlagValues, PreparedScenario, Scenario, ScenarioContext } from '../../harness/scenario.js';
import type { BenchCase, SkippedCase } from '../../harness/types.js';
import { casesFor, type ForwardConfig } from './cases.js';
import { decoderQuality } from './quality.js';

/** Positions of the teacher-forced prefill each decoder variant's quality is measured on. */
const QUALITY_POSITIONS = 256;

/** How the scenario gets a model; tests pass a source of small hand-built graphs. */
export type ModelSource = (family: ModelFamily, size: ModelSize) => Promise<Pick<BuiltModel, 'dir' | 'modelPath'>>;

const FAMILIES: readonly ModelFamily[] = ['qwen3', 'bert', 'resnet'];
const SIZES: readonly ModelSize[] = ['tiny', 'bench'];

export function forwardScenario(source: ModelSource = ensureBuilt): Scenario {
  return {
    name: 'forward',
    description: 'bare session.run time of the decoder (decode steps, prefill), encoder and CNN: the floor the engine is measured against',
    flags: {
      size: { type: 'string', usage: '--size tiny|bench', description: 'model size to build and time (default bench)' },
      families: { type: 'string', usage: '--families qwen3,bert,resnet', description: 'model families to time' },
      precisions: { type: 'string', usage: '--precisions fp32,int8,fp16,q4,q4f16', description: 'model variants to time (q4 / q4f16: decoders only)' },
      threads: { type: 'string', usage: '--threads N', description: 'intraOpNumThreads (default: number of cores)' },
      batches: { type: 'string', usage: '--batches 1,8,32', description: 'batch sizes of every family' },
      past: { type: 'string', usage: '--past N', description: 'decoder past length for decode steps (default 256; quick 32)' },
      prefill: { type: 'string', usage: '--prefill N', description: 'decoder prefill length at batch 1, 0 for none (default 512; quick 64)' },
      seq: { type: 'string', usage: '--seq N', description: 'encoder sequence length (default 128; quick 32)' },
    },
    defaults: { full: { reps: 10, warmup: 2 }, quick: { reps: 3, warmup: 1 }, baseline: 'fp32' },
    prepare: (context) => prepareForward(source, context),
  };
}

export function forwardConfig(flags: FlagValues, quick: boolean): ForwardConfig {
  const size = stringList(flags['size'], SIZES, ['bench'], '--size');
  if (size.length !== 1) throw new Error('--size takes one size');
  return {
    size: size[0]!,
    families: stringList(flags['families'], FAMILIES, FAMILIES, '--families'),
    precisions: stringList(flags['precisions'], DECODER_PRECISIONS, ['fp32', 'int8', 'fp16'], '--precisions'),
    threads: positiveInt(flags['threads'], availableParallelism(), '--threads', 1),
    batches: intList(flags['batches'], [1, 8, 32], '--batches'),
    past: positiveInt(flags['past'], quick ? 32 : 256, '--past', 1),
    prefill: positiveInt(flags['prefill'], quick ? 64 : 512, '--prefill', 0),
    encoderSeq: positiveInt(flags['seq'], quick ? 32 : 128, '--seq', 1),
    imageSize: quick ? 64 : 224,
  };
}

async function prepareForward(source: ModelSource, context: ScenarioContext): Promise<PreparedScenario> {
  const config = forwardConfig(context.flags, context.quick);
  const sessions: ort.InferenceSession[] = [];
  const cases: BenchCase[] = [];
  const skipped: SkippedCase[] = [];
  const notes: string[] = [];
  const skipAll = (family: ModelFamily, reason: string): void => {
    for (const variant of config.precisions) skipped.push({ group: family, variant, reason });
  };

  for (const family of config.families) {
    context.log(`building ${family} ${config.size}…`);
    let built: Pick<BuiltModel, 'dir' | 'modelPath'>;
    try {
      built = await source(family, config.size);
    } catch (error) {
      skipAll(family, `model did not build: ${messageOf(error)}`);
      continue;
    }
    const loadedHere = new Map<WeightPrecision, ort.InferenceSession>();
    for (const precision of config.precisions) {
      try {
        const loaded = await loadVariant(built, precision, config);
        sessions.push(loaded.session);
        loadedHere.set(precision, loaded.session);
        const { cases: modelCases, description } = casesFor({ family, precision, session: loaded.session, dir: built.dir }, config);
        cases.push(...modelCases);
        notes.push(`${family} ${config.size} ${precision}: ${description}; ${loaded.fileNote}`);
      } catch (error) {
        skipped.push({ group: family, variant: precision, reason: messageOf(error) });
      }
    }
    if (family === 'qwen3') notes.push(...(await qualityNotes(loadedHere, config, context.log)));
  }
  return {
    cases: orderForFairness(cases),
    skipped,
    charts: chartsFor(config),
    notes,
    settings: { ...config, imageSize: `${config.imageSize} where the CNN leaves H and W free` },
    dispose: async () => {
      for (const session of sessions) await session.release();
    },
  };
}

/** Each decoder variant against fp32 (when both were loaded): top-1 agreement and max |Δlogit|. */
async function qualityNotes(loaded: ReadonlyMap<WeightPrecision, ort.InferenceSession>, config: ForwardConfig, log: (line: string) => void): Promise<string[]> {
  const reference = loaded.get('fp32');
  if (!reference) return [];
  const notes: string[] = [];
  for (const [precision, session] of loaded) {
    if (precision === 'fp32') continue;
    log(`qwen3 ${precision}: quality against fp32 over ${QUALITY_POSITIONS} positions…`);
    const q = await decoderQuality(reference, session, QUALITY_POSITIONS);
    notes.push(
      `qwen3 ${config.size} ${precision} vs fp32 (teacher-forced, ${q.positions} seeded random tokens): top-1 agreement ${(q.top1Agreement * 100).toFixed(1)}%, max |Δlogit| ${q.maxAbsLogitDiff.toFixed(3)}`,
    );
  }
  return notes;
}

async function loadVariant(built: Pick<BuiltModel, 'modelPath'>, precision: WeightPrecision, config: ForwardConfig) {
  const path = built.modelPath(precision);
  if (!existsSync(path)) throw new Error(`no ${precision} file at ${path}`);
  const started = performance.now();
  const session = await ort.InferenceSession.create(path, {
    intraOpNumThreads: config.threads,
    // One run at a time, as in an engine worker: parallelism is inside each operator.
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
  });
  const mb = statSync(path).size / 1e6;
  const shown = relative(process.cwd(), path) || path;
  return { session, fileNote: `${shown} (${mb.toFixed(1)} MB), session created in ${((performance.now() - started) / 1000).toFixed(2)} s` };
}

/**
 * Keeps declaration order but puts each family's variants next to each other per point
 * (qwen3 fp32 decode b1, qwen3 int8 decode b1, …), so the variants compared by a ratio also run
 * closest together in time.
 */
function orderForFairness(cases: readonly BenchCase[]): BenchCase[] {
  const keys: string[] = [];
  const byKey = new Map<string, BenchCase[]>();
  for (const c of cases) {
    const key = `${c.group}\u0000${c.point}`;
    if (!byKey.has(key)) {
      keys.push(key);
      byKey.set(key, []);
    }
    byKey.get(key)!.push(c);
  }
  return keys.flatMap((key) => byKey.get(key)!);
}

function chartsFor(config: ForwardConfig): ChartRequest[] {
  return config.families.flatMap((family): ChartRequest[] => {
    const decoder = family === 'qwen3';
    const unit = decoder ? 'tokens/s' : 'items/s';
    return [
      {
        kind: 'bar',
        file: `${family}-ms.svg`,
        title: `${family} ${config.size}: forward time per run (median ms)`,
        yLabel: 'ms per run',
        select: (r) => r.group === family,
        seriesOf: (r) => r.variant,
        value: (r) => r.stats.median,
      },
      {
        kind: 'line',
        file: `${family}-throughput.svg`,
        title: decoder ? `${family} ${config.size}: decode tokens/s vs batch (past ${config.past})` : `${family} ${config.size}: ${unit} vs batch`,
        xLabel: 'batch size',
        yLabel: unit,
        logX: true,
        select: (r) => r.group === family && (!decoder || r.params['phase'] === 'decode'),
        seriesOf: (r) => r.variant,
        x: (r) => Number(r.params['batch']),
        y: (r) => r.throughput?.perSecond ?? NaN,
      },
    ];
  });
}
