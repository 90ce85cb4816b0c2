// The context sweep of `npm run bench -- engine --sweep 128,1024,2048`: at each prompt length and
// concurrency, a whole throughput workload on a fresh EngineCore per runner — the Optimum graph's
// PastKeyValuesRunner and the paged graph's PagedRunner, back to back so their ratio is taken
// under the same load — with the runner's time by phase, and the bare Optimum forward pass of the
// same work (the floor at that context). With `--precision int8,q4` every runner and the floor run
// at each variant within each point, and the report gives each precision's ratio to the first.
// Cases of the harness (interleaved, repeated); their rates come from the workloads' own wall
// times, not from the round trip to the worker.

import type { BenchCase, CaseResult } from '../../harness/types.js';
import { caseId } from '../../harness/types.js';
import type { ChartRequest } from '../../harness/charts.js';
import { markdownTable } from '../../harness/markdown.js';
import type { BenchWorker } from './bench-worker-client.js';
import type { EngineBenchConfig } from './config.js';
import { medianOf } from './workload.js';
import type { EngineWorkerData } from '../../../src/contracts/engine-messages.js';
import type { WeightPrecision } from '../../../kernels/linear.js';
import type { VariantQuality } from '../forward/quality.js';
import type { ForwardFloor, WorkloadProfile } from './workload-profile.js';

export const SWEEP_GROUP = 'context';
export const SWEEP_VARIANT = {
  pastKeyValues: 'PastKeyValuesRunner',
  paged: 'PagedRunner',
  native: 'NativePagedRunner',
  nativeHalfKv: 'NativePagedRunner fp16 KV',
  nativeInt8Kv: 'NativePagedRunner int8 KV',
  floor: 'forward floor',
} as const;
/** The runners a sweep can compare (--sweep-runners names them by these keys), in table order. */
export const SWEEP_RUNNERS = ['pastKeyValues', 'paged', 'native', 'nativeHalfKv', 'nativeInt8Kv'] as const;
export type SweepRunner = (typeof SWEEP_RUNNERS)[number];
const RUNNER_VARIANTS = SWEEP_RUNNERS.map((key) => SWEEP_VARIANT[key]);

/** Targets of issue 13 on this machine: the paged runner at the largest concurrency. */
export const SWEEP_TARGETS = { longContextShare: 0.75, shortPrompt: 128, longPrompt: 2048 } as const;

/** Issue 13's 4-bit target: q4 against int8 at one stream, output tok/s, each runner and the floor. */
export const PRECISION_TARGET = { faster: 'q4', than: 'int8', concurrency: 1, speedup: 1.4 } as const;

/** Each compared precision's logits against fp32's (teacher-forced, forward/quality.ts); fp32 itself has none. */
export type SweepQuality = ReadonlyMap<WeightPrecision, VariantQuality>;

/** What each measured sweep run observed, by case id. */
export type SweepObservations = Map<string, (WorkloadProfile | ForwardFloor)[]>;

/** One decoder variant of the sweep: each runner's engine settings (null where the model has no such file, or the run left the runner out) and the floor's model file. */
export interface SweepVariant {
  readonly precision: WeightPrecision;
  readonly runners: Readonly<Record<SweepRunner, EngineWorkerData | null>>;
  readonly floorModelPath: string;
}

type Slot = { readonly warmup?: boolean } | undefined;

const pointOf = (prompt: number, concurrency: number) => `p${prompt} c${concurrency}`;

/** A case's variant: the runner, and its precision where the sweep compares several (one precision keeps the plain runner names). */
export function sweepVariantName(config: Pick<EngineBenchConfig, 'precisions'>, runner: string, precision: WeightPrecision): string {
  return config.precisions.length > 1 ? `${runner} ${precision}` : runner;
}

export function sweepCases(config: EngineBenchConfig, worker: BenchWorker, variants: readonly SweepVariant[], observed: SweepObservations): BenchCase[] {
  return config.sweep.flatMap((prompt) =>
    config.concurrency.flatMap((concurrency) =>
      // Precisions inside a point: the runs a precision ratio compares are taken minutes, not a whole sweep, apart.
      variants.flatMap(({ precision, runners, floorModelPath }) => {
        const info = (runner: string) => ({
          group: SWEEP_GROUP,
          variant: sweepVariantName(config, runner, precision),
          point: pointOf(prompt, concurrency),
          params: { promptTokens: prompt, concurrency, outputTokens: config.outputTokens, runner, precision },
          work: { count: concurrency * config.outputTokens, unit: 'tok' },
        });
        const observe = (runner: string, measure: () => Promise<WorkloadProfile | ForwardFloor>): BenchCase => {
          const runs: (WorkloadProfile | ForwardFloor)[] = [];
          const base = info(runner);
          observed.set(caseId(base), runs);
          return {
            ...base,
            run: async (slot?: Slot) => {
              const result = await measure();
              if (!slot?.warmup) runs.push(result);
            },
          };
        };
        const workload = (data: EngineWorkerData) => () => worker.workload(data, concurrency, prompt, config.outputTokens);
        return [
          ...SWEEP_RUNNERS.flatMap((key) => {
            const data = runners[key];
            return data ? [observe(SWEEP_VARIANT[key], workload(data))] : [];
          }),
          observe(SWEEP_VARIANT.floor, () => worker.forwardFloor(config, floorModelPath, concurrency, prompt)),
        ];
      }),
    ),
  );
}

const isWorkload = (run: WorkloadProfile | ForwardFloor): run is WorkloadProfile => 'breakdown' in run;
const tokens = (r: CaseResult) => Number(r.params['concurrency']) * Number(r.params['outputTokens']);

interface SweepRates {
  readonly tokPerSec: number;
  readonly decodeTokPerSec: number;
  readonly fullBatchTokPerSec: number;
}
type SweepMetric = keyof SweepRates;

/**
 * Output tokens/s of a sweep case from its runs' own wall times (median run): of the whole
 * workload (prefill included), of its decode phase (draining tail included), and of its decode
 * steps with every stream decoding (WorkloadProfile.fullBatchSteps); the floor's decode step runs
 * at batch `concurrency`, so it is both of the latter.
 */
function ratesOf(r: CaseResult, runs: readonly (WorkloadProfile | ForwardFloor)[]): SweepRates {
  const concurrency = Number(r.params['concurrency']);
  const wall = medianOf(runs.map((run) => (isWorkload(run) ? run.wallMs : run.workloadMs)));
  const decode = medianOf(runs.map((run) => (isWorkload(run) ? (run.decodeTokens * 1000) / run.decodeMs : (concurrency * 1000) / run.decodeMs)));
  const fullBatch = medianOf(runs.map((run) => (isWorkload(run) ? (run.fullBatchSteps > 0 ? (concurrency * run.fullBatchSteps * 1000) / run.fullBatchMs : NaN) : (concurrency * 1000) / run.decodeMs)));
  return { tokPerSec: (tokens(r) * 1000) / wall, decodeTokPerSec: decode, fullBatchTokPerSec: fullBatch };
}

export interface SweepConclusion {
  readonly metrics: Map<string, SweepRates>;
  readonly sections: string[];
  readonly targets: { name: string; aim: string; measured: string; met: string }[];
}

export function concludeSweep(results: readonly CaseResult[], observed: SweepObservations, config: EngineBenchConfig, quality: SweepQuality = new Map()): SweepConclusion {
  const metrics = new Map<string, SweepRates>();
  const sweep = results.filter((r) => r.group === SWEEP_GROUP);
  for (const r of sweep) metrics.set(r.id, ratesOf(r, observed.get(r.id) ?? []));
  const runnerOf = (r: CaseResult) => String(r.params['runner']);
  const precisionOf = (r: CaseResult) => String(r.params['precision']);
  const lookUp =
    (metric: SweepMetric) =>
    (runner: string, prompt: number, concurrency: number, precision: WeightPrecision = config.precision): number => {
      const hit = sweep.find((r) => runnerOf(r) === runner && precisionOf(r) === precision && r.point === pointOf(prompt, concurrency));
      return hit ? (metrics.get(hit.id)?.[metric] ?? NaN) : NaN;
    };
  const [rate, decodeRate, fullBatchRate] = [lookUp('tokPerSec'), lookUp('decodeTokPerSec'), lookUp('fullBatchTokPerSec')];
  const runners = RUNNER_VARIANTS.filter((runner) => sweep.some((r) => runnerOf(r) === runner));
  const measuredRunners = [...runners, SWEEP_VARIANT.floor];
  const named = (runner: string, precision: WeightPrecision) => sweepVariantName(config, runner, precision);
  // One row per point, precision and runner (the floor included): rates, and ratios to the PKV runner, the floor and the runner's own shortest prompt, each at the row's precision.
  const comparison = config.sweep.flatMap((prompt) =>
    config.concurrency.flatMap((c) =>
      config.precisions.flatMap((p) => {
        const [pkv, pkvDecode, floorDecode] = [rate(SWEEP_VARIANT.pastKeyValues, prompt, c, p), decodeRate(SWEEP_VARIANT.pastKeyValues, prompt, c, p), decodeRate(SWEEP_VARIANT.floor, prompt, c, p)];
        return measuredRunners.map((runner) => {
          const [tokPerSec, decode, short] = [rate(runner, prompt, c, p), decodeRate(runner, prompt, c, p), decodeRate(runner, config.sweep[0]!, c, p)];
          const [full, fullShort] = [fullBatchRate(runner, prompt, c, p), fullBatchRate(runner, config.sweep[0]!, c, p)];
          return [
            named(runner, p),
            String(prompt),
            String(c),
            fixed(tokPerSec),
            ratio(tokPerSec / pkv),
            fixed(decode),
            ratio(decode / pkvDecode),
            ratio(decode / floorDecode),
            ratio(decode / short),
            fixed(full),
            ratio(full / floorDecode),
            ratio(full / fullShort),
          ];
        });
      }),
    ),
  );
  const breakdown = sweep
    .filter((r) => runnerOf(r) !== SWEEP_VARIANT.floor)
    .map((r) => {
      const runs = (observed.get(r.id) ?? []).filter(isWorkload);
      const median = runs.sort((a, b) => a.wallMs - b.wallMs)[Math.floor(runs.length / 2)];
      return median ? breakdownRow(r.variant, median) : null;
    })
    .filter((row): row is string[] => row !== null);
  const floors = sweep
    .filter((r) => runnerOf(r) === SWEEP_VARIANT.floor)
    .map((r) => {
      const runs = (observed.get(r.id) ?? []).filter((run): run is ForwardFloor => !isWorkload(run));
      const f = runs[Math.floor(runs.length / 2)];
      return f ? [precisionOf(r), String(f.promptTokens), String(f.concurrency), f.decodeMs.toFixed(1), `${f.prefillCalls} × ${f.prefillMs.toFixed(0)}`, (f.workloadMs / 1000).toFixed(2)] : null;
    })
    .filter((row): row is string[] => row !== null);
  const top = Math.max(...config.concurrency);
  const { shortPrompt, longPrompt, longContextShare } = SWEEP_TARGETS;
  // The targets, for each paged runner at each precision: the graph's attention (PagedRunner) and the native kernel's (float32, float16 and int8 cache).
  const targets = config.precisions.flatMap((p) =>
    runners
      .filter((runner) => runner !== SWEEP_VARIANT.pastKeyValues)
      .flatMap((runner) => {
        const vsPkv = rate(runner, shortPrompt, top, p) / rate(SWEEP_VARIANT.pastKeyValues, shortPrompt, top, p);
        // Decode at batch `top` against the floor's decode at batch `top`, and against itself at the short prompt: the steps with every stream decoding.
        const vsFloor = fullBatchRate(runner, shortPrompt, top, p) / decodeRate(SWEEP_VARIANT.floor, shortPrompt, top, p);
        const longShare = fullBatchRate(runner, longPrompt, top, p) / fullBatchRate(runner, shortPrompt, top, p);
        const name = named(runner, p);
        return [
          { name: `${name} vs PastKeyValuesRunner, whole workload, c${top}, prompt ${shortPrompt}`, aim: '≥ 1.00×', measured: ratio(vsPkv), met: verdict(vsPkv, vsPkv >= 1) },
          {
            name: `${name} decode (all ${top} streams decoding) vs the Optimum forward floor at batch ${top}, prompt ${shortPrompt}`,
            aim: '≥ 1.00×',
            measured: ratio(vsFloor),
            met: verdict(vsFloor, vsFloor >= 1),
          },
          {
            name: `${name} decode (all ${top} streams decoding) at prompt ${longPrompt} vs its own at prompt ${shortPrompt}`,
            aim: `≥ ${(longContextShare * 100).toFixed(0)}%`,
            measured: Number.isFinite(longShare) ? `${(longShare * 100).toFixed(0)}%` : '–',
            met: verdict(longShare, longShare >= longContextShare),
          },
        ];
      }),
  );
  const precisions = comparePrecisions(config, measuredRunners, rate, decodeRate, quality);
  targets.push(...precisions.targets);
  const sections = [
    '### Context sweep: every runner and the forward floor (output tok/s of the whole workload, prefill included; of its decode phase, the draining tail included; and of the decode steps with every stream decoding)',
    '',
    markdownTable(
      [
        'Runner',
        'Prompt',
        'Requests',
        'tok/s',
        '/ PKV',
        'Decode tok/s',
        '/ PKV (decode)',
        '/ floor (decode)',
        `Decode vs prompt ${config.sweep[0]}`,
        'All decoding tok/s',
        '/ floor (all decoding)',
        `All decoding vs prompt ${config.sweep[0]}`,
      ],
      comparison,
      ['left', ...Array.from({ length: 11 }, () => 'right' as const)],
    ),
    '',
    ...precisions.sections,
    '### Context sweep: where each workload’s time goes (median run, s and share of wall)',
    '',
    markdownTable(
      BREAKDOWN_HEADERS,
      breakdown,
      BREAKDOWN_HEADERS.map(() => 'right'),
    ),
    '',
    '### Context sweep: the forward floor (bare Optimum session.run of the same work)',
    '',
    markdownTable(['Precision', 'Prompt', 'Requests', 'Decode step ms (mid past)', 'Prefill calls × ms', 'Workload s'], floors, ['left', 'right', 'right', 'right', 'right', 'right']),
    '',
  ];
  return { metrics, sections, targets };
}

type SweepTarget = SweepConclusion['targets'][number];
type RateOf = (runner: string, prompt: number, concurrency: number, precision: WeightPrecision) => number;

/**
 * Each precision against the first, runner by runner at every point (the precisions' runs
 * alternate within a point), each variant's quality against fp32, and issue 13's 4-bit target
 * where the run has both of its variants and one stream. Nothing where the sweep ran one precision.
 */
function comparePrecisions(config: EngineBenchConfig, runners: readonly string[], rate: RateOf, decodeRate: RateOf, quality: SweepQuality): { sections: string[]; targets: SweepTarget[] } {
  const [first, ...others] = config.precisions;
  if (!first || others.length === 0) return { sections: [], targets: [] };
  const rows = others.flatMap((p) =>
    config.sweep.flatMap((prompt) =>
      config.concurrency.flatMap((c) =>
        runners.map((runner) => [
          runner,
          String(prompt),
          String(c),
          `${p} vs ${first}`,
          ratio(rate(runner, prompt, c, p) / rate(runner, prompt, c, first)),
          ratio(decodeRate(runner, prompt, c, p) / decodeRate(runner, prompt, c, first)),
        ]),
      ),
    ),
  );
  const targets: SweepTarget[] = [];
  const { faster, than, concurrency: oneStream, speedup } = PRECISION_TARGET;
  if (config.precisions.includes(faster) && config.precisions.includes(than) && config.concurrency.includes(oneStream)) {
    const prompt = config.sweep[0]!;
    const agreement = [faster, than].map((p) => `${p} ${qualityText(quality.get(p))}`).join(', ');
    for (const runner of runners) {
      const measured = rate(runner, prompt, oneStream, faster) / rate(runner, prompt, oneStream, than);
      targets.push({
        name: `${runner}: ${faster} vs ${than} output tok/s, c${oneStream}, prompt ${prompt} (vs fp32: ${agreement})`,
        aim: `≥ ${speedup.toFixed(2)}×`,
        measured: ratio(measured),
        met: verdict(measured, measured >= speedup),
      });
    }
  }
  const sections = [
    `### Context sweep: each precision against ${first} (same runner and point; the precisions' runs alternate within each point)`,
    '',
    markdownTable(['Runner', 'Prompt', 'Requests', 'Precision', 'tok/s ratio', 'Decode tok/s ratio'], rows, ['left', 'right', 'right', 'left', 'right', 'right']),
    '',
    'Quality against fp32 (teacher-forced over seeded random tokens, every position’s logits; bench/scenarios/forward/quality.ts):',
    '',
    markdownTable(
      ['Precision', 'Positions', 'Top-1 agreement', 'Max |Δlogit|'],
      config.precisions.map((p) => {
        const q = quality.get(p);
        return [p, q ? String(q.positions) : '–', q ? `${(q.top1Agreement * 100).toFixed(1)}%` : p === 'fp32' ? '(reference)' : '–', q ? q.maxAbsLogitDiff.toFixed(4) : '–'];
      }),
      ['left', 'right', 'right', 'right'],
    ),
    '',
  ];
  return { sections, targets };
}

const BREAKDOWN_HEADERS = [
  'Runner',
  'Prompt',
  'Requests',
  'Output tok/s',
  'Decode tok/s',
  'Wall s',
  'Steps / ORT calls',
  'ORT s',
  'Gather s',
  'Copy-back s',
  'Attention (kernel) s',
  'Layer ops (kernel) s',
  'Token feeds s',
  'Logits s',
  'Other s',
  'Past positions read',
];

function breakdownRow(runner: string, w: WorkloadProfile): string[] {
  const share = (ms: number) => `${(ms / 1000).toFixed(2)} (${((100 * ms) / w.wallMs).toFixed(0)}%)`;
  const b = w.breakdown;
  return [
    runner,
    String(w.promptTokens),
    String(w.concurrency),
    ((w.concurrency * w.outputTokens * 1000) / w.wallMs).toFixed(1),
    ((w.decodeTokens * 1000) / w.decodeMs).toFixed(1),
    (w.wallMs / 1000).toFixed(2),
    `${w.steps} / ${w.ortCalls}`,
    share(b.ortMs),
    share(b.gatherMs),
    share(b.scatterMs),
    share(b.attentionMs),
    share(b.layersMs),
    share(b.feedsMs),
    share(b.logitsMs),
    share(w.otherMs),
    b.gatheredPositions.toLocaleString('en-US'),
  ];
}

export function sweepChart(config: EngineBenchConfig, label: string): ChartRequest {
  return {
    kind: 'line',
    file: 'engine-context-sweep.svg',
    title: `${label}: output tokens/s vs prompt length (output ${config.outputTokens}), both runners and the forward floor`,
    xLabel: 'prompt tokens',
    yLabel: 'tokens/s',
    select: (r) => r.group === SWEEP_GROUP,
    seriesOf: (r) => `${r.variant} c${r.params['concurrency']}`,
    x: (r) => Number(r.params['promptTokens']),
    y: (r) => (typeof r.metrics?.['tokPerSec'] === 'number' ? r.metrics['tokPerSec'] : NaN),
  };
}

const verdict = (value: number, ok: boolean) => (Number.isNaN(value) ? 'no data' : ok ? 'met' : 'missed');
const qualityText = (q: VariantQuality | undefined) => (q ? `top-1 ${(q.top1Agreement * 100).toFixed(1)}%, max |Δlogit| ${q.maxAbsLogitDiff.toFixed(2)}` : 'quality not measured');

const fixed = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const ratio = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '–');
