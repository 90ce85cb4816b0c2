// What the serve scenario reports: every point's metrics on its case (results.json), a throughput
// table and a latency table side by side per concurrency, the charts, and last the issue's target
// check at 32 concurrent streams.

import type { ChartRequest } from '../../harness/charts.js';
import { formatMs, formatRate, markdownTable, type Align } from '../../harness/markdown.js';
import type { ScenarioConclusion } from '../../harness/scenario.js';
import type { CaseResult } from '../../harness/types.js';
import type { Distribution, ServeMetrics } from './metrics.js';

export const TARGET = { concurrency: 32, throughputRatio: 4, ttftSpread: 3, system: 'conveyor', baseline: 'naive' } as const;

export interface MeasuredPoint {
  readonly system: string;
  readonly concurrency: number;
  readonly metrics: ServeMetrics;
  /** 1-minute load average as each measured run started. */
  readonly loadAverages: readonly number[];
}

export interface ReportSettings {
  readonly systems: readonly string[];
  readonly concurrency: readonly number[];
  readonly withGoodput: boolean;
}

type Find = (system: string, concurrency: number) => ServeMetrics | undefined;
type FindLoad = (system: string, concurrency: number) => readonly number[] | undefined;

export function conclude(cases: readonly CaseResult[], measured: ReadonlyMap<string, MeasuredPoint>, settings: ReportSettings): ScenarioConclusion {
  const point = (system: string, concurrency: number) => [...measured.values()].find((m) => m.system === system && m.concurrency === concurrency);
  const find: Find = (system, concurrency) => point(system, concurrency)?.metrics;
  const findLoad: FindLoad = (system, concurrency) => point(system, concurrency)?.loadAverages;
  const metrics = new Map<string, Record<string, unknown>>();
  for (const c of cases) {
    const entry = measured.get(c.id);
    if (!entry) continue;
    const naive = find(TARGET.baseline, entry.concurrency);
    const ratio = naive && entry.system !== TARGET.baseline ? { outputThroughputVsNaive: entry.metrics.outputThroughput / naive.outputThroughput } : {};
    metrics.set(c.id, { system: entry.system, concurrency: entry.concurrency === Infinity ? 'inf' : entry.concurrency, ...entry.metrics, ...ratio, loadAverages: entry.loadAverages });
  }
  const sections = [
    '### Throughput',
    '',
    throughputTable(settings, find, findLoad),
    '',
    '### Latency (ms: mean / median / p90 / p99)',
    '',
    latencyTable(settings, find),
    '',
    `### Target check (issue 6, ${TARGET.concurrency} concurrent streams)`,
    '',
    ...targetSection(settings, find),
  ];
  return { metrics, results: sections.join('\n') };
}

const num = (value: number | null | undefined, format: (n: number) => string): string => (value === null || value === undefined || !Number.isFinite(value) ? '–' : format(value));
const conc = (c: number): string => (c === Infinity ? '∞' : String(c));

function rows(settings: ReportSettings, find: Find): { concurrency: number; system: string; m: ServeMetrics }[] {
  return settings.concurrency.flatMap((concurrency) =>
    settings.systems.flatMap((system) => {
      const m = find(system, concurrency);
      return m ? [{ concurrency, system, m }] : [];
    }),
  );
}

function throughputTable(settings: ReportSettings, find: Find, findLoad: FindLoad): string {
  const headers = ['Conc.', 'System', 'Done', 'Failed', 'Duration s', 'Req/s', 'Output tok/s', 'Total tok/s', 'Output vs naive', 'Peak output tok/s', 'Peak in flight', 'Load 1m'];
  if (settings.withGoodput) headers.push('Goodput req/s');
  const body = rows(settings, find).map(({ concurrency, system, m }) => {
    const naive = find(TARGET.baseline, concurrency);
    const cells = [
      conc(concurrency),
      system,
      String(m.completed),
      String(m.failed),
      m.durationS.toFixed(1),
      num(m.requestThroughput, formatRate),
      num(m.outputThroughput, formatRate),
      num(m.totalTokenThroughput, formatRate),
      naive && system !== TARGET.baseline ? `${(m.outputThroughput / naive.outputThroughput).toFixed(2)}×` : '',
      String(m.maxOutputTokensPerS),
      String(m.maxConcurrentRequests),
      (findLoad(system, concurrency) ?? []).map((l) => l.toFixed(1)).join(', '),
    ];
    if (settings.withGoodput) cells.push(num(m.requestGoodput, formatRate));
    return cells;
  });
  return markdownTable(
    headers,
    body,
    headers.map((_, i): Align => (i === 1 ? 'left' : 'right')),
  );
}

function spread(d: Distribution): string {
  return d.n === 0 ? '–' : [d.mean, d.median, d.p90, d.p99].map(formatMs).join(' / ');
}

function latencyTable(settings: ReportSettings, find: Find): string {
  const headers = ['Conc.', 'System', 'TTFT', 'TPOT', 'ITL', 'E2E'];
  const body = rows(settings, find).map(({ concurrency, system, m }) => [conc(concurrency), system, spread(m.ttftMs), spread(m.tpotMs), spread(m.itlMs), spread(m.e2elMs)]);
  return markdownTable(
    headers,
    body,
    headers.map((_, i): Align => (i === 1 ? 'left' : 'right')),
  );
}

export function targetSection(settings: ReportSettings, find: Find): string[] {
  const c = TARGET.concurrency;
  if (!settings.concurrency.includes(c)) return [`_Concurrency ${c} was not in the sweep, so the target was not checked._`];
  const conveyor = find(TARGET.system, c);
  const naive = find(TARGET.baseline, c);
  if (!conveyor || !naive)
    return [`_The target needs both \`${TARGET.system}\` and \`${TARGET.baseline}\` measured at concurrency ${c}; ${conveyor ? TARGET.baseline : TARGET.system} was not, so it was not checked._`];
  const ratio = conveyor.outputThroughput / naive.outputThroughput;
  const ttftSpread = conveyor.ttftMs.p99 / conveyor.ttftMs.median;
  const serial = find('conveyor-serial', c);
  const lines = [
    `- Output-token throughput: ${TARGET.system} ≥ ${TARGET.throughputRatio}× ${TARGET.baseline}. TTFT: ${TARGET.system}'s p99 ≤ ${TARGET.ttftSpread}× its median.`,
    `- For scale: the issue puts the physical ceiling for this shape at about 4.9× (bare forward pass, batch 32 vs batch 1).${serial ? ` Batching off (conveyor-serial) gives ${(serial.outputThroughput / naive.outputThroughput).toFixed(2)}× the naive server: the serving overhead with no batching.` : ''}`,
    '',
  ];
  const table = markdownTable(
    ['Check', 'Measured', 'Target', 'Verdict'],
    [
      [
        'Output tok/s vs naive',
        `${formatRate(conveyor.outputThroughput)} ÷ ${formatRate(naive.outputThroughput)} = ${ratio.toFixed(2)}×`,
        `≥ ${TARGET.throughputRatio}×`,
        verdict(ratio >= TARGET.throughputRatio),
      ],
      [
        'p99 TTFT vs median',
        `${formatMs(conveyor.ttftMs.p99)} ÷ ${formatMs(conveyor.ttftMs.median)} ms = ${ttftSpread.toFixed(2)}×`,
        `≤ ${TARGET.ttftSpread}×`,
        verdict(ttftSpread <= TARGET.ttftSpread),
      ],
    ],
    ['left', 'right', 'right', 'left'],
  );
  return [...lines, table];
}

function verdict(ok: boolean): string {
  return ok ? 'met' : 'NOT met';
}

const metricsOf = (r: CaseResult): (ServeMetrics & { concurrency: number | 'inf' }) | undefined => r.metrics as (ServeMetrics & { concurrency: number | 'inf' }) | undefined;

/** x is the cap; an uncapped point sits at its number of prompts (the most it could have in flight). */
function xOf(r: CaseResult): number {
  const c = r.params['concurrency'];
  return typeof c === 'number' ? c : Number(r.params['prompts']);
}

export function serveCharts(model: string): ChartRequest[] {
  const base = {
    kind: 'line' as const,
    xLabel: 'max concurrency (requests in flight)',
    logX: true,
    select: (r: CaseResult) => metricsOf(r) !== undefined,
    seriesOf: (r: CaseResult) => r.variant,
    x: xOf,
  };
  const latency = (file: string, what: string, pick: (m: ServeMetrics) => Distribution, at: 'median' | 'p99'): ChartRequest => ({
    ...base,
    file,
    title: `${model}: ${what} ${at} vs concurrency`,
    yLabel: `${what} ${at} ms`,
    y: (r) => {
      const m = metricsOf(r);
      return m ? pick(m)[at] : NaN;
    },
  });
  return [
    { ...base, file: 'throughput.svg', title: `${model}: output-token throughput vs concurrency`, yLabel: 'output tokens/s', y: (r) => metricsOf(r)?.outputThroughput ?? NaN },
    latency('ttft-median.svg', 'TTFT', (m) => m.ttftMs, 'median'),
    latency('ttft-p99.svg', 'TTFT', (m) => m.ttftMs, 'p99'),
    latency('tpot-median.svg', 'TPOT', (m) => m.tpotMs, 'median'),
    latency('e2el-p99.svg', 'E2E latency', (m) => m.e2elMs, 'p99'),
  ];
}
