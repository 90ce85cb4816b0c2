// `npm run bench -- infer`: a perf_analyzer-style concurrency sweep against the real server. The
// bench encoder and CNN are served twice each, behind the dynamic batcher and without it, and
// every (model, protocol, concurrency) point runs both side by side, interleaved by the harness.
// --pipelines sweeps the default repository's ensembles instead (pipelines.ts): in the server vs
// chained by the client.

import { availableParallelism, loadavg } from 'node:os';
import { ensureBuilt, type BuiltModel } from '../../../models/catalog.js';
import type { ModelSize } from '../../../models/common/model-files.js';
import { intList, positiveInt, stringList } from '../../harness/args.js';
import { messageOf } from '../../harness/runner.js';
import type { FlagValues, PreparedScenario, Scenario, ScenarioContext } from '../../harness/scenario.js';
import type { BenchCase, SkippedCase } from '../../harness/types.js';
import { grpcClient, type InferClient } from './load-grpc.js';
import { pointMetrics } from './metrics.js';
import { chartsFor, conclude, type MetricsByCase } from './report.js';
import { makeRepository, readModelIo, servedName, VARIANTS, type BatchingSettings, type RepositoryModel } from './repository.js';
import { startServerProcess, type ServerProcess } from './server-process.js';
import { preparePipelines } from './pipelines.js';
import { prepareTarget, sweepCase, type CaseSink, type Endpoints, type Protocol } from './targets.js';

type Family = 'bert' | 'resnet';
const FAMILIES: readonly Family[] = ['bert', 'resnet'];
const PROTOCOLS: readonly Protocol[] = ['http', 'grpc'];
const TARGET = { concurrency: 32, ratio: 3 };

export type ModelSource = (family: Family, size: ModelSize) => Promise<Pick<BuiltModel, 'dir' | 'modelPath'>>;

export interface InferConfig {
  readonly size: ModelSize;
  readonly families: readonly Family[];
  readonly protocols: readonly Protocol[];
  readonly concurrency: readonly number[];
  readonly windowS: number;
  readonly warmupS: number;
  readonly rampS: number;
  readonly seq: number;
  readonly imageSide: number;
  readonly batching: BatchingSettings;
}

export function inferScenario(source: ModelSource = ensureBuilt): Scenario {
  return {
    name: 'infer',
    description: 'perf_analyzer-style concurrency sweep over HTTP and gRPC of the encoder and CNN, dynamic batching vs none, on the real server',
    flags: {
      size: { type: 'string', usage: '--size tiny|bench', description: 'model size (default bench; --quick: tiny)' },
      models: { type: 'string', usage: '--models bert,resnet', description: 'model families to serve' },
      protocols: { type: 'string', usage: '--protocols http,grpc', description: 'front ends to load' },
      concurrency: { type: 'string', usage: '--concurrency 1,2,4,…', description: 'requests outstanding per point (default 1,2,4,8,16,32,64; --quick: 1,4)' },
      window: { type: 'string', usage: '--window S', description: 'measured seconds per point and rep (default 3; --quick: 1)' },
      'warmup-window': { type: 'string', usage: '--warmup-window S', description: 'seconds of each warm-up rep (default 1; --quick: 0.5)' },
      ramp: { type: 'string', usage: '--ramp S', description: 'seconds of load before a window opens (default 0.5; --quick: 0.25)' },
      'queue-delay-us': { type: 'string', usage: '--queue-delay-us N', description: 'max_queue_delay_microseconds of the batched models (default 5000)' },
      preferred: { type: 'string', usage: '--preferred 8,16,32', description: 'preferred_batch_size of the batched models' },
      'max-batch': { type: 'string', usage: '--max-batch N', description: 'max_batch_size of every model (default 32)' },
      instances: { type: 'string', usage: '--instances N', description: 'instance_group count of every model (default 1)' },
      seq: { type: 'string', usage: '--seq N', description: 'encoder sequence length (default 128; --quick: 16)' },
      image: { type: 'string', usage: '--image N', description: 'CNN image side where the model leaves it free (default 224; --quick: 64)' },
      pipelines: {
        type: 'boolean',
        usage: '--pipelines',
        description: "sweep the default repository's ensembles (text-embedder, image-classifier) in the server vs chained by the client, JSON and binary (concurrency default 1,8,32)",
      },
    },
    defaults: { full: { reps: 1, warmup: 1 }, quick: { reps: 1, warmup: 1 }, baseline: 'unbatched' },
    prepare: (context) => (context.flags['pipelines'] === true ? preparePipelinesFromFlags(context) : prepareInfer(source, context)),
  };
}

export function inferConfig(flags: FlagValues, quick: boolean): InferConfig {
  const size = stringList<ModelSize>(flags['size'], ['tiny', 'bench'], [quick ? 'tiny' : 'bench'], '--size');
  if (size.length !== 1) throw new Error('--size takes one size');
  return {
    size: size[0]!,
    families: stringList(flags['models'], FAMILIES, FAMILIES, '--models'),
    protocols: stringList(flags['protocols'], PROTOCOLS, PROTOCOLS, '--protocols'),
    concurrency: intList(flags['concurrency'], quick ? [1, 4] : [1, 2, 4, 8, 16, 32, 64], '--concurrency'),
    windowS: seconds(flags['window'], quick ? 1 : 3, '--window', false),
    warmupS: seconds(flags['warmup-window'], quick ? 0.5 : 1, '--warmup-window', true),
    rampS: seconds(flags['ramp'], quick ? 0.25 : 0.5, '--ramp', true),
    seq: positiveInt(flags['seq'], quick ? 16 : 128, '--seq', 1),
    imageSide: positiveInt(flags['image'], quick ? 64 : 224, '--image', 1),
    batching: {
      maxBatchSize: positiveInt(flags['max-batch'], 32, '--max-batch', 1),
      preferred: intList(flags['preferred'], [8, 16, 32], '--preferred'),
      queueDelayUs: positiveInt(flags['queue-delay-us'], 5000, '--queue-delay-us', 0),
      instances: positiveInt(flags['instances'], 1, '--instances', 1),
    },
  };
}

function preparePipelinesFromFlags(context: ScenarioContext): Promise<PreparedScenario> {
  const config = inferConfig(context.flags, context.quick);
  const concurrency = context.flags['concurrency'] === undefined ? (context.quick ? [1, 4] : [1, 8, 32]) : config.concurrency;
  return preparePipelines({ concurrency, windowS: config.windowS, warmupS: config.warmupS, rampS: config.rampS }, context);
}

function seconds(value: string | boolean | undefined, fallback: number, flag: string, zeroOk: boolean): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value !== 'string' || !Number.isFinite(n) || n < 0 || (n === 0 && !zeroOk)) throw new Error(`${flag} needs seconds ${zeroOk ? '≥' : '>'} 0, got '${String(value)}'`);
  return n;
}

async function buildModels(source: ModelSource, config: InferConfig, skipped: SkippedCase[], log: (m: string) => void): Promise<RepositoryModel[]> {
  const built: RepositoryModel[] = [];
  for (const family of config.families) {
    log(`building ${family} ${config.size}…`);
    try {
      const model = await source(family, config.size);
      built.push({ family, dir: model.dir, ...(await readModelIo(model.modelPath('fp32'))) });
    } catch (error) {
      for (const variant of VARIANTS) skipped.push({ group: family, variant, reason: `model did not build: ${messageOf(error)}` });
    }
  }
  return built;
}

async function prepareInfer(source: ModelSource, context: ScenarioContext): Promise<PreparedScenario> {
  const config = inferConfig(context.flags, context.quick);
  const skipped: SkippedCase[] = [];
  const models = await buildModels(source, config, skipped, context.log);
  const repository = await makeRepository(models, config.batching);
  let server: ServerProcess | undefined;
  let client: InferClient | undefined;
  const dispose = async (): Promise<void> => {
    client?.close();
    await server?.stop();
    await repository.remove();
  };
  try {
    context.log(`starting the server on ${repository.root}…`);
    server = await startServerProcess(repository.root);
    client = grpcClient(server.grpcAddress);
    const endpoints: Endpoints = { http: server.http, client };
    const measured: MetricsByCase = new Map();
    const sink: CaseSink = { log: context.log, record: (id, key, variant, windows) => measured.set(id, { key, variant, metrics: pointMetrics(windows) }) };
    const { cases, notes } = await casesFor(models, config, endpoints, sink, skipped);
    const loadAtStart = loadavg()[0]!;
    return {
      cases,
      skipped,
      charts: chartsFor(config.families, config.size),
      notes: [...setupNotes(config, server), ...notes],
      settings: { ...config, batching: JSON.stringify(config.batching), cores: availableParallelism() },
      conclude: (results) => {
        const conclusion = conclude(results, measured, {
          ...config,
          queueDelayUs: config.batching.queueDelayUs,
          targetConcurrency: TARGET.concurrency,
          targetRatio: TARGET.ratio,
          batchSizes: batchSizesOf(config.batching),
        });
        const load = `1-minute load average ${loadAtStart.toFixed(2)} before the sweep, ${loadavg()[0]!.toFixed(2)} after, on ${availableParallelism()} cores (server, load generator and anything else running share them).`;
        return { ...conclusion, notes: [load] };
      },
      dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/** Batched and unbatched next to each other at every point, so the pair runs closest in time. */
async function casesFor(models: readonly RepositoryModel[], config: InferConfig, endpoints: Endpoints, sink: CaseSink, skipped: SkippedCase[]) {
  const cases: BenchCase[] = [];
  const notes: string[] = [];
  for (const model of models) {
    const family = model.family as Family;
    const freeDim = family === 'bert' ? config.seq : config.imageSide;
    try {
      const targets = await Promise.all(VARIANTS.map((variant) => prepareTarget(endpoints, servedName(family, variant), variant, freeDim)));
      notes.push(...targets.map((t) => t.description));
      for (const protocol of config.protocols) {
        for (const concurrency of config.concurrency) {
          for (const target of targets) cases.push(sweepCase(target, { family, protocol, concurrency }, config, endpoints, sink));
        }
      }
    } catch (error) {
      for (const variant of VARIANTS) skipped.push({ group: family, variant, reason: messageOf(error) });
    }
  }
  return { cases, notes };
}

function batchSizesOf(b: BatchingSettings): number[] {
  return [...new Set([1, ...b.preferred, b.maxBatchSize])].sort((x, y) => x - y);
}

function setupNotes(config: InferConfig, server: ServerProcess): string[] {
  const b = config.batching;
  return [
    `Server: \`src/cli.ts serve\` as a child process (pid ${server.pid}) over a temporary repository with each model twice: \`<model>-batched\` (dynamic_batching { preferred_batch_size [${b.preferred.join(', ')}], max_queue_delay_microseconds ${b.queueDelayUs} }) and \`<model>-unbatched\` (no dynamic_batching: one request per execution); max_batch_size ${b.maxBatchSize}, ${b.instances} CPU instance(s) each.`,
    'Load: HTTP through autocannon (one keep-alive connection per outstanding request, binary tensor extension with Inference-Header-Content-Length, all outputs binary); gRPC through @grpc/grpc-js unary ModelInfer with raw_input_contents over one channel. Every request is batch 1, so requests/s = infer/s.',
    `Each point: at least ${config.rampS} s of load before the window opens, then at least ${config.windowS} s counted per measured rep (warm-up reps: ${config.warmupS} s); both also wait until as many responses as clients have come back (capped at ${config.rampS} + 2 × and 3 × the window), so a point whose batches take seconds still has its steady state and more than one batch in the window. Latency percentiles are over every response completed inside the windows; the server split is the statistics extension diffed across the same windows.`,
    'In results.json, `samplesMs` and the harness statistics are window wall times (ramp + window + stopping), not request latencies: the point numbers are under `metrics`.',
  ];
}
