// `npm run bench -- precision`: each precision variant of the bench decoder, encoder and CNN
// served by the real server (a child process, explicit model control): file size, the server's
// memory accounting and the RSS each load added, throughput at each concurrency through the
// OpenAI and KServe routes, quality against fp32 (decoder: greedy top-1 agreement and max logit
// difference on one teacher-forced prefill; encoder: embedding cosine; CNN: top-1 agreement), and
// a live swap fp32 → int8 → fp16 → fp32 under traffic: how long each takes and the latency the
// requests overlapping it saw against those before it.

import { readFileSync } from 'node:fs';
import { stat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { WeightPrecision } from '../../../kernels/linear.js';
import type { ModelFamily } from '../../../models/catalog.js';
import { DECODER_PRECISIONS, type ModelSize } from '../../../models/common/model-files.js';
import { ATTENTION_BACKENDS, type AttentionBackend } from '../../../src/repository/variants.js';
import { intList, positiveInt, stringList } from '../../harness/args.js';
import { messageOf } from '../../harness/runner.js';
import type { FlagValues, PreparedScenario, Scenario, ScenarioContext } from '../../harness/scenario.js';
import type { BenchCase, CaseResult } from '../../harness/types.js';
import { decoderQuality, QUALITY_POSITIONS } from '../forward/quality.js';
import { startServerProcess, type ServerProcess } from '../infer/server-process.js';
import { FAMILIES, SWAP, buildRepository, servedName, type FamilyModels } from './repository.js';
import { argmax, cosine, request, type RequestShape } from './requests.js';
import { measureSwaps } from './swap.js';

export interface PrecisionConfig {
  readonly size: ModelSize;
  readonly families: readonly ModelFamily[];
  /** transformers.js variant names; the 4-bit ones (q4, q4f16) are served for the decoder only. */
  readonly precisions: readonly WeightPrecision[];
  readonly concurrency: readonly number[];
  readonly outputTokens: number;
  readonly kvCacheBytes: number;
  /** Images (CNN) and prefill positions (decoder) the quality numbers are taken over. */
  readonly qualitySamples: number;
  /** intra_op_thread_count of every served model; undefined leaves the server's default (one per core). */
  readonly threads: number | undefined;
  /** The decoder's attention_backend; undefined leaves the server's default (past_key_values). */
  readonly attentionBackend: AttentionBackend | undefined;
}

export function precisionConfig(flags: FlagValues, quick: boolean): PrecisionConfig {
  const size = stringList(flags['size'], ['tiny', 'bench'] as const, [quick ? 'tiny' : 'bench'], '--size');
  if (size.length !== 1) throw new Error('--size takes one size');
  return {
    size: size[0]!,
    families: stringList(flags['families'], FAMILIES, FAMILIES, '--families'),
    precisions: stringList(flags['precisions'], DECODER_PRECISIONS, ['fp32', 'int8', 'fp16'], '--precisions'),
    concurrency: intList(flags['concurrency'], quick ? [1, 8] : [1, 32], '--concurrency'),
    outputTokens: positiveInt(flags['output'], quick ? 8 : 64, '--output', 1),
    kvCacheBytes: (quick ? 16 : 256) << 20,
    qualitySamples: quick ? 16 : QUALITY_POSITIONS,
    threads: flags['threads'] === undefined ? undefined : positiveInt(flags['threads'], 1, '--threads', 1),
    attentionBackend: flags['attention-backend'] === undefined ? undefined : stringList(flags['attention-backend'], ATTENTION_BACKENDS, [], '--attention-backend')[0],
  };
}

export function precisionScenario(): Scenario {
  return {
    name: 'precision',
    description: 'precision variants served: file size, memory, throughput at concurrency 1 and 32, quality vs fp32, swap time and latency during a swap',
    flags: {
      size: { type: 'string', usage: '--size tiny|bench', description: 'models to serve (default bench; quick tiny)' },
      families: { type: 'string', usage: '--families qwen3,bert,resnet', description: 'model families to serve' },
      precisions: { type: 'string', usage: '--precisions fp32,int8,fp16,q4,q4f16', description: 'variants to serve (fp32 is the baseline; q4 and q4f16 for the decoder only)' },
      concurrency: { type: 'string', usage: '--concurrency 1,32', description: 'concurrent requests per throughput point (quick 1,8)' },
      output: { type: 'string', usage: '--output N', description: 'output tokens per decoder request (default 64; quick 8)' },
      threads: { type: 'string', usage: '--threads N', description: "every served model's intra_op_thread_count (default: the server's, one per core)" },
      'attention-backend': {
        type: 'string',
        usage: `--attention-backend ${ATTENTION_BACKENDS.join('|')}`,
        description: "the decoder's attention_backend (default: the server's, past_key_values)",
      },
    },
    defaults: { full: { reps: 5, warmup: 1 }, quick: { reps: 2, warmup: 1 }, baseline: 'fp32' },
    prepare: (context) => preparePrecision(context),
  };
}

/** VmRSS of a process, bytes (Linux); null where /proc is not there. */
function rssOf(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

async function load(server: ServerProcess, model: string): Promise<void> {
  const response = await fetch(`${server.http}/v2/repository/models/${model}/load`, { method: 'POST' });
  if (!response.ok) throw new Error(`loading ${model}: ${response.status} ${await response.text()}`);
}

async function accountedBytes(server: ServerProcess, model: string): Promise<number> {
  const stats = (await (await fetch(`${server.http}/v2/models/${model}/stats`)).json()) as { model_stats: { memory_usage: { byte_size: number }[] }[] };
  return stats.model_stats[0]?.memory_usage.reduce((n, m) => n + Number(m.byte_size), 0) ?? 0;
}

/** The file the server loaded for `model` (KServe metadata's model_file, relative to the version directory). */
async function servedFile(server: ServerProcess, model: string): Promise<string> {
  const metadata = (await (await fetch(`${server.http}/v2/models/${model}`)).json()) as { parameters?: { model_file?: string } };
  const file = metadata.parameters?.model_file;
  if (!file) throw new Error(`${model}: the model metadata names no model_file`);
  return file;
}

/** A model file's size, or a segmented decoder directory's (model_paged*.segments/) in all. */
async function bytesOf(path: string): Promise<number> {
  const info = await stat(path);
  if (!info.isDirectory()) return info.size;
  const entries = await readdir(path);
  return (await Promise.all(entries.map((entry) => bytesOf(join(path, entry))))).reduce((a, b) => a + b, 0);
}

const MiB = (bytes: number | null): string => (bytes === null ? 'n/a' : `${(bytes / 2 ** 20).toFixed(1)} MiB`);

async function preparePrecision(context: ScenarioContext): Promise<PreparedScenario> {
  const config = precisionConfig(context.flags, context.quick);
  const { root, families } = await buildRepository(
    config.size,
    config.families,
    config.precisions,
    config.kvCacheBytes,
    { threads: config.threads, attentionBackend: config.attentionBackend },
    context.log,
  );
  context.log('starting the server…');
  const server = await startServerProcess(root, 180_000, ['--model-control-mode', 'explicit'], { MALLOC_ARENA_MAX: '1' });
  const dispose = () => server.stop();
  try {
    const rows: string[] = ['| model | precision | file | accounted | RSS added by the load | quality vs fp32 |', '|---|---|---|---|---|---|'];
    const shape: { imageDims: number[] } = { imageDims: [] };
    for (const { family, built, precisions } of families) {
      for (const precision of precisions) {
        const model = servedName(family, precision);
        const before = rssOf(server.pid);
        await load(server, model);
        const after = rssOf(server.pid);
        const file = await servedFile(server, model);
        rows.push(
          `| ${family} | ${precision} | ${file}, ${MiB(await bytesOf(join(built.dir, file)))} | ${MiB(await accountedBytes(server, model))} | ${before === null || after === null ? 'n/a' : MiB(after - before)} | QUALITY:${family}:${precision} |`,
        );
      }
      await load(server, servedName(family, SWAP));
      if (family === 'resnet') {
        const metadata = (await (await fetch(`${server.http}/v2/models/${servedName(family, 'fp32')}`)).json()) as { inputs: { shape: number[] }[] };
        shape.imageDims = metadata.inputs[0]!.shape.slice(1).map((d) => (d < 0 ? 64 : d));
      }
    }
    const requestShape: RequestShape = { outputTokens: config.outputTokens, imageDims: shape.imageDims };
    const quality = await measureQuality(server, families, config, requestShape);
    const table = rows.map((row) => row.replace(/QUALITY:(\w+):(\w+)/, (_, family: string, precision: string) => quality.get(`${family}:${precision}`) ?? 'baseline'));
    context.log('measuring swaps under traffic…');
    const swaps = await measureSwaps(server.http, families, requestShape);
    return {
      cases: throughputCases(server.http, families, config, requestShape),
      skipped: [],
      charts: [{ kind: 'bar', file: 'precision-throughput.svg', title: 'Throughput per variant', yLabel: 'work / s', select: () => true, value: (r) => r.throughput?.perSecond ?? 0 }],
      notes: [
        "memory: `accounted` is the server's own books (the weights file per instance + an LLM's KV pool, /v2/models/{m}/stats memory_usage); `RSS added` is the server process's VmRSS after the load minus before it (MALLOC_ARENA_MAX=1; onnxruntime arenas and the JS heap included)",
        `throughput: every request of a point sent at once; decoder: /v1/completions, ${config.outputTokens} tokens, greedy, ignore_eos (work = tokens); encoder: /v1/embeddings of one text; CNN: KServe infer of one image (work = requests)`,
        ...swaps.notes,
        ...families.filter((f) => f.skipped.length > 0).map((f) => `${f.family}: no ${f.skipped.join(', ')} variant is built for this family (4-bit weights are decoder-only), skipped`),
      ],
      settings: { ...config, repository: root },
      conclude: (results) => ({ results: [...throughputTable(results, families, config), '', ...table, '', ...swaps.table].join('\n') }),
      dispose,
    };
  } catch (error) {
    await dispose();
    throw new Error(`precision benchmark setup failed: ${messageOf(error)}`);
  }
}

function throughputCases(http: string, families: readonly FamilyModels[], config: PrecisionConfig, shape: RequestShape): BenchCase[] {
  const cases: BenchCase[] = [];
  for (const { family, precisions } of families) {
    for (const precision of precisions) {
      for (const c of config.concurrency) {
        const work = family === 'qwen3' ? { count: c * config.outputTokens, unit: 'tokens' } : { count: c, unit: 'requests' };
        cases.push({
          group: family,
          variant: precision,
          point: `c${c}`,
          params: { concurrency: c },
          work,
          run: () => Promise.all(Array.from({ length: c }, (_, i) => request(http, family, servedName(family, precision), shape, i))),
        });
      }
    }
  }
  return cases;
}

/** Median throughput per variant and concurrency, the ratio to fp32 beside it. */
function throughputTable(results: readonly CaseResult[], families: readonly FamilyModels[], config: PrecisionConfig): string[] {
  const header = `| model | precision | ${config.concurrency.map((c) => `c${c}`).join(' | ')} |`;
  const rows = [header, `|---|---|${config.concurrency.map(() => '---|').join('')}`];
  for (const { family, precisions } of families) {
    for (const precision of precisions) {
      const cells = config.concurrency.map((c) => {
        const r = results.find((x) => x.group === family && x.variant === precision && x.point === `c${c}`);
        if (!r?.throughput) return 'n/a';
        const vsFp32 = r.ratio === undefined || precision === 'fp32' ? '' : ` (time ×${r.ratio.toFixed(2)})`;
        return `${r.throughput.perSecond.toFixed(1)} ${r.throughput.unit}${vsFp32}`;
      });
      rows.push(`| ${family} | ${precision} | ${cells.join(' | ')} |`);
    }
  }
  return rows;
}

/** Each variant against fp32, as a cell of the table: by the metric the issue names for the family. */
async function measureQuality(server: ServerProcess, families: readonly FamilyModels[], config: PrecisionConfig, shape: RequestShape): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const { family, built, precisions } of families) {
    const reference = family === 'qwen3' ? await ort.InferenceSession.create(built.modelPath('fp32'), { logSeverityLevel: 3 }) : null;
    for (const precision of precisions.filter((p) => p !== 'fp32')) {
      out.set(`${family}:${precision}`, await qualityOf(server.http, family, precision, reference, built.modelPath(precision), config, shape));
    }
    await reference?.release();
  }
  return out;
}

async function qualityOf(
  http: string,
  family: ModelFamily,
  precision: WeightPrecision,
  reference: ort.InferenceSession | null,
  file: string,
  config: PrecisionConfig,
  shape: RequestShape,
): Promise<string> {
  if (reference) {
    const candidate = await ort.InferenceSession.create(file, { logSeverityLevel: 3 });
    const q = await decoderQuality(reference, candidate, config.qualitySamples);
    await candidate.release();
    return `top-1 ${(q.top1Agreement * 100).toFixed(1)}% of ${q.positions}, max logit diff ${q.maxAbsLogitDiff.toFixed(4)}`;
  }
  const samples = Array.from({ length: family === 'bert' ? 3 : config.qualitySamples }, (_, i) => i);
  const pairs = await Promise.all(
    samples.map(async (i) => [await request(http, family, servedName(family, 'fp32'), shape, i), await request(http, family, servedName(family, precision), shape, i)] as const),
  );
  if (family === 'bert') return `cosine min ${Math.min(...pairs.map(([a, b]) => cosine(a as number[], b as number[]))).toFixed(5)} over ${pairs.length} texts`;
  const agree = pairs.filter(([a, b]) => argmax(a as number[]) === argmax(b as number[])).length;
  return `top-1 ${agree}/${pairs.length} images`;
}
