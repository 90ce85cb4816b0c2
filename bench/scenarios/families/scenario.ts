// `npm run bench -- families`: what each converted family costs and how fast it serves. Per
// family, a bench-size random checkpoint made by its own transformers class
// (make_bench_checkpoints.py), converted by `conveyor convert` in a child process each (fp32
// --paged for all, a few quantized ones), timed with its peak RSS; then each conversion served by
// its own Conveyor server (one at a time) on each attention backend at 1 and 8 concurrent streams,
// against the bench decoder (models/build/qwen3-bench) served the same way at the start and at the
// end of the run, whose mean is the baseline each family's tok/s is divided by.

import { loadavg } from 'node:os';
import { ensureBuilt } from '../../../models/catalog.js';
import { intList, positiveInt, stringList } from '../../harness/args.js';
import type { FlagValues, PreparedScenario, Scenario, ScenarioContext } from '../../harness/scenario.js';
import type { BenchCase, CaseResult } from '../../harness/types.js';
import { runLoad } from '../serve/arrivals.js';
import { sendCompletion, type RequestOutput } from '../serve/client.js';
import { buildDataset } from '../serve/dataset.js';
import { calculateMetrics, type ServeMetrics } from '../serve/metrics.js';
import { type Checkpoints, conversionDir, convertTimed, ensureCheckpoints, type ConversionSpec } from './conversions.js';
import { BASELINE_PREFIX, baselineDrift, conversionLine, conversionTable, servingTable, type ConversionRecord, type ServingRecord } from './report.js';
import { GroupServers, servedName, type GroupModel } from './servers.js';

export const FAMILIES = ['llama', 'mistral', 'qwen2', 'qwen3', 'gemma3', 'phi3', 'smollm3', 'granite', 'olmo2'] as const;
const BACKENDS = ['past_key_values', 'paged'] as const;
const BASELINE_START = `${BASELINE_PREFIX}-start`;
const BASELINE_END = `${BASELINE_PREFIX}-end`;

const FLAGS = {
  families: { type: 'string', usage: '--families a,b', description: `families to build, convert and serve (default ${FAMILIES.join(',')})` },
  quantized: { type: 'string', usage: '--quantized fam:prec,…', description: 'extra conversions timed, not served (default llama:int8,llama:q4,gemma3:q4; none: no extra)' },
  backends: { type: 'string', usage: '--backends a,b', description: `attention backends served (default ${BACKENDS.join(',')})` },
  concurrency: { type: 'string', usage: '--concurrency 1,8', description: 'concurrent streams, one point each (default 1,8)' },
  'input-len': { type: 'string', usage: '--input-len L', description: 'prompt tokens (default 128; --quick: 16)' },
  'output-len': { type: 'string', usage: '--output-len L', description: 'output tokens, greedy with ignore_eos (default 128; --quick: 8)' },
  'num-prompts': { type: 'string', usage: '--num-prompts N', description: 'requests per point: N × concurrency (default 2 at c1, 1 wave at c > 1 — i.e. max(2, c))' },
} as const;

interface FamiliesConfig {
  readonly families: readonly string[];
  readonly quantized: readonly ConversionSpec[];
  readonly backends: readonly string[];
  readonly concurrency: readonly number[];
  readonly inputLen: number;
  readonly outputLen: number;
  readonly promptsPerStream: number | undefined;
}

function readConfig(flags: FlagValues, quick: boolean): FamiliesConfig {
  const families = stringList<string>(flags['families'], FAMILIES, quick ? ['llama'] : FAMILIES, '--families');
  const quantizedText = typeof flags['quantized'] === 'string' ? flags['quantized'] : quick ? 'none' : 'llama:int8,llama:q4,gemma3:q4';
  const quantized =
    quantizedText === 'none'
      ? []
      : quantizedText.split(',').map((item) => {
          const [family, precision] = item.trim().split(':');
          if (!family || !precision || !(FAMILIES as readonly string[]).includes(family) || !['fp16', 'int8', 'q4', 'q4f16'].includes(precision))
            throw new Error(`--quantized: '${item}' is not family:int8|q4|fp16|q4f16`);
          return { family, precision, paged: true };
        });
  return {
    families,
    quantized: quantized.filter((q) => families.includes(q.family)),
    backends: stringList<string>(flags['backends'], ['past_key_values', 'paged', 'paged_onnx'], BACKENDS, '--backends'),
    concurrency: intList(flags['concurrency'], [1, 8], '--concurrency'),
    inputLen: positiveInt(flags['input-len'], quick ? 16 : 128, '--input-len', 1),
    outputLen: positiveInt(flags['output-len'], quick ? 8 : 128, '--output-len', 1),
    promptsPerStream: flags['num-prompts'] === undefined ? undefined : positiveInt(flags['num-prompts'], 1, '--num-prompts', 1),
  };
}

const promptsAt = (config: FamiliesConfig, concurrency: number): number => (config.promptsPerStream === undefined ? Math.max(2, concurrency) : config.promptsPerStream * concurrency);

export function familiesScenario(): Scenario {
  return {
    name: 'families',
    description: 'every converted family: conversion time and peak RSS against the checkpoint, served output tok/s at 1 and 8 streams per attention backend vs the bench decoder',
    flags: FLAGS,
    defaults: { full: { reps: 1, warmup: 0 }, quick: { reps: 1, warmup: 0 }, baseline: 'past_key_values' },
    prepare: (context) => prepareFamilies(context),
  };
}

async function prepareFamilies(context: ScenarioContext): Promise<PreparedScenario> {
  const config = readConfig(context.flags, context.quick);
  const { log } = context;
  const machineBusy = busyNote();
  const checkpoints = await ensureCheckpoints(config.families, log);
  const conversions = await convertAll(checkpoints, config, log);
  const baseline = await ensureBuilt('qwen3', 'bench', { log });
  const models = new Map<string, GroupModel>([
    [BASELINE_START, { group: BASELINE_START, dir: baseline.dir }],
    ...config.families.map((family): [string, GroupModel] => [family, { group: family, dir: conversionDir({ family, precision: 'fp32', paged: true }) }]),
    [BASELINE_END, { group: BASELINE_END, dir: baseline.dir }],
  ]);
  const servers = new GroupServers(models, config.backends, Math.max(8, ...config.concurrency), log);
  const outputs = new Map<string, { group: string; backend: string; concurrency: number; outputs: RequestOutput[]; durationMs: number; load: number }>();
  const cases: BenchCase[] = [...models.keys()].flatMap((group) =>
    config.backends.flatMap((backend) =>
      config.concurrency.map((concurrency, pointIndex): BenchCase => {
        const point = `c${concurrency}`;
        const numPrompts = promptsAt(config, concurrency);
        return {
          group,
          variant: backend,
          point,
          params: { concurrency, prompts: numPrompts, inputLen: config.inputLen, outputLen: config.outputLen },
          work: { count: numPrompts * config.outputLen, unit: 'tokens' },
          run: async () => {
            const server = await servers.use(group);
            const spec = { kind: 'random' as const, numPrompts, inputLen: config.inputLen, outputLen: config.outputLen, rangeRatio: 0, prefixLen: 0, numPrefixes: 1, seed: 1000 + pointIndex };
            const prompts = buildDataset(spec, server.tokenizer);
            const target = { baseUrl: server.baseUrl, model: servedName(group, backend) };
            const load = loadavg()[0]!;
            const result = await runLoad(prompts.length, { requestRate: Infinity, burstiness: 1, maxConcurrency: concurrency, seed: pointIndex }, (i) => sendCompletion(target, prompts[i]!));
            if (!result.outputs.some((o) => o.success)) throw new Error(`every request failed: ${result.outputs[0]?.error ?? 'no requests'}`);
            outputs.set(`${group} ${backend} ${point}`, { group, backend, concurrency, outputs: result.outputs, durationMs: result.durationMs, load });
            const m = calculateMetrics(result.outputs, result.durationMs);
            log(`${group} ${backend} ${point}: ${m.outputThroughput.toFixed(1)} output tok/s, TPOT median ${m.tpotMs.median.toFixed(1)} ms, load average ${load.toFixed(2)}`);
          },
        };
      }),
    ),
  );
  return {
    cases,
    skipped: [],
    charts: [
      {
        kind: 'bar',
        file: 'families-throughput.svg',
        title: `Output tok/s per family (${config.inputLen} in, ${config.outputLen} out)`,
        yLabel: 'output tok/s',
        select: (r) => r.metrics !== undefined,
        seriesOf: (r) => `${r.variant} ${r.point}`,
        value: (r) => (r.metrics as { outputThroughput: number }).outputThroughput,
        categoryOf: (r) => r.group,
      },
    ],
    notes: [
      `Checkpoints: make_bench_checkpoints.py with transformers ${checkpoints.transformers}, each family's own class, bf16 safetensors, hidden 512, 8 layers, 8 heads / 2 KV heads, head_dim 64, intermediate 1408, vocab 151,936 (the bench decoder's shape), random weights; cached in models/build/families/.`,
      'Conversions: `node --import tsx src/cli.ts convert` in a child process each, into a fresh directory, under GNU time (wall s, maximum resident set of that process); sequential, nothing else of the bench running meanwhile.',
      `Serving: one Conveyor server per family at a time (src/cli.ts serve over a temporary repository), the model once per attention backend (${config.backends.join(', ')}), fp32, max_num_seqs ${Math.max(8, ...config.concurrency)}, other settings at their defaults; warmed with 2 short requests per backend. Baseline: the bench decoder (models/build/qwen3-bench, Qwen3 shape, built by models/, not converted) served the same way first and again last; ratios divide by the mean of its two runs.`,
      `Client: bench -- serve's (POST /v1/completions, stream, ignore_eos, temperature 0), ${config.inputLen}-token random prompts (exact length via the model's tokenizer), ${config.outputLen} output tokens, all requests due at once with at most the point's concurrency in flight; requests per point: ${config.concurrency.map((c) => `c${c} ${promptsAt(config, c)}`).join(', ')}.`,
      machineBusy,
    ],
    settings: { ...config, quantized: config.quantized.map((q) => `${q.family}:${q.precision}`), conversions: conversions.map(conversionLine) },
    conclude: (results) => conclude(results, outputs, conversions, servers),
    dispose: () => servers.stop(),
  };
}

async function convertAll(checkpoints: Checkpoints, config: FamiliesConfig, log: (line: string) => void): Promise<ConversionRecord[]> {
  const specs: ConversionSpec[] = [...config.families.map((family) => ({ family, precision: 'fp32', paged: true })), ...config.quantized];
  const records: ConversionRecord[] = [];
  for (const spec of specs) {
    const record = await convertTimed(checkpoints, spec, log);
    log(`${record.family} ${record.variant}: ${record.wallS.toFixed(1)} s, peak RSS ${record.peakRssBytes === null ? '?' : `${(record.peakRssBytes / 2 ** 20).toFixed(0)} MiB`}`);
    records.push(record);
  }
  return records;
}

/** Other heavy work on the machine when the bench started (the CI runner, vitest, another bench). */
function busyNote(): string {
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
  return `Load average (1/5/15 min) when the run started: ${load}; per point, the 1-minute load average is in the progress log and results.json (metrics.loadAverage).`;
}

function conclude(
  results: readonly CaseResult[],
  outputs: ReadonlyMap<string, { group: string; backend: string; concurrency: number; outputs: RequestOutput[]; durationMs: number; load: number }>,
  conversions: readonly ConversionRecord[],
  servers: GroupServers,
) {
  const metrics = new Map<string, Readonly<Record<string, unknown>>>();
  const serving: ServingRecord[] = [];
  for (const result of results) {
    const run = outputs.get(result.id);
    if (!run) continue;
    const m: ServeMetrics = calculateMetrics(run.outputs, run.durationMs);
    metrics.set(result.id, { ...m, loadAverage: run.load });
    serving.push({ group: run.group, backend: run.backend, concurrency: run.concurrency, outputTokS: m.outputThroughput, failed: m.failed });
  }
  const drift = baselineDrift(serving).map((d) => `${d.backend} c${d.concurrency} ${(d.spread * 100).toFixed(0)}%`);
  const starts = [...servers.startTimes()].map(([group, time]) => `${group} ${time}`);
  const notes = [
    ...(drift.length > 0 ? [`Baseline start vs end (how far the machine drifted over the run): ${drift.join(', ')}.`] : []),
    ...(starts.length > 0 ? [`Server start-up to warm (load of both backends + warm-up): ${starts.join(', ')}.`] : []),
  ];
  const resultsMarkdown = [
    '### Conversion',
    '',
    conversionTable(conversions),
    '',
    '### Serving: output tok/s, and × the bench decoder at the same backend and concurrency',
    '',
    servingTable(serving),
    '',
  ].join('\n');
  return { metrics, notes, results: resultsMarkdown };
}
