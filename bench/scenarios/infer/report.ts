// What the sweep reports: per-point metrics on every case (results.json), a side-by-side table of
// batched and unbatched at each concurrency, the charts, and last the target check.

import type { ChartRequest } from '../../harness/charts.js';
import { formatMs, formatRate, markdownTable, type Align } from '../../harness/markdown.js';
import type { ScenarioConclusion } from '../../harness/scenario.js';
import type { CaseResult } from '../../harness/types.js';
import type { PointMetrics } from './metrics.js';
import type { Variant } from './repository.js';

export interface PointKey {
  readonly family: string;
  readonly protocol: string;
  readonly concurrency: number;
}

export interface ReportSettings {
  readonly families: readonly string[];
  readonly protocols: readonly string[];
  readonly concurrency: readonly number[];
  readonly queueDelayUs: number;
  readonly targetConcurrency: number;
  readonly targetRatio: number;
  /** Batch sizes the compute table shows (1, the preferred sizes, max_batch_size). */
  readonly batchSizes: readonly number[];
}

export interface MeasuredPoint {
  readonly key: PointKey;
  readonly variant: Variant;
  readonly metrics: PointMetrics;
}

/** By case id, filled in as measured windows finish. */
export type MetricsByCase = Map<string, MeasuredPoint>;

export function conclude(cases: readonly CaseResult[], measured: ReadonlyMap<string, MeasuredPoint>, settings: ReportSettings): ScenarioConclusion {
  const find = (key: PointKey, variant: Variant): PointMetrics | undefined => [...measured.values()].find((m) => m.variant === variant && sameKey(m.key, key))?.metrics;
  const metrics = new Map<string, Record<string, unknown>>();
  for (const c of cases) {
    const entry = measured.get(c.id);
    if (!entry) continue;
    const other = find(entry.key, entry.variant === 'batched' ? 'unbatched' : 'batched');
    const ratio = entry.variant === 'batched' && other ? { throughputVsUnbatched: entry.metrics.throughput / other.throughput } : {};
    metrics.set(c.id, { ...entry.key, variant: entry.variant, ...entry.metrics, ...ratio });
  }
  const keys = pointKeys(settings);
  const sections = ['### Every point', '', pointTable(keys, find), ''];
  sections.push('### Compute by batch size', '', ...computeSection([...measured.values()], settings), '');
  sections.push(`### Target check (issue 3, concurrency ${settings.targetConcurrency})`, '');
  sections.push(...targetSection(keys, find, settings));
  return { metrics, results: sections.join('\n') };
}

function sameKey(a: PointKey, b: PointKey): boolean {
  return a.family === b.family && a.protocol === b.protocol && a.concurrency === b.concurrency;
}

function pointKeys(settings: ReportSettings): PointKey[] {
  return settings.families.flatMap((family) => settings.protocols.flatMap((protocol) => settings.concurrency.map((concurrency) => ({ family, protocol, concurrency }))));
}

type Find = (key: PointKey, variant: Variant) => PointMetrics | undefined;

const num = (value: number | undefined, format: (n: number) => string): string => (value === undefined || !Number.isFinite(value) ? '–' : format(value));
const computeMs = (m: PointMetrics): number => m.server.computeInputMs + m.server.computeInferMs + m.server.computeOutputMs;
const latencies = (m: PointMetrics | undefined): string => (m ? `${formatMs(m.p50Ms)} / ${formatMs(m.p90Ms)} / ${formatMs(m.p99Ms)}` : '–');
const split = (m: PointMetrics | undefined): string => (m ? `${num(m.server.queueMs, formatMs)} / ${num(computeMs(m), formatMs)}` : '–');

function pointTable(keys: readonly PointKey[], find: Find): string {
  const headers = [
    'Model',
    'Protocol',
    'Conc.',
    'Batched infer/s',
    'Unbatched infer/s',
    'Batched ÷ unbatched',
    'Batched p50 / p90 / p99 ms',
    'Unbatched p50 / p90 / p99 ms',
    'Avg batch',
    'Batched queue / compute ms',
    'Unbatched queue / compute ms',
  ];
  const align: Align[] = ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'];
  const rows = keys.map((key) => {
    const b = find(key, 'batched');
    const u = find(key, 'unbatched');
    return [
      key.family,
      key.protocol,
      String(key.concurrency),
      num(b?.throughput, formatRate),
      num(u?.throughput, formatRate),
      b && u ? `${(b.throughput / u.throughput).toFixed(2)}×` : '–',
      latencies(b),
      latencies(u),
      num(b?.server.avgBatch, (n) => n.toFixed(1)),
      split(b),
      split(u),
    ];
  });
  return markdownTable(headers, rows, align);
}

/**
 * What batching can buy at most when compute is the bottleneck: the server's batch_stats summed
 * over the whole sweep (both variants: the unbatched model contributes batch 1), as ms per item.
 */
function computeSection(points: readonly MeasuredPoint[], settings: ReportSettings): string[] {
  const largest = settings.batchSizes[settings.batchSizes.length - 1]!;
  const headers = ['Model', ...settings.batchSizes.map((b) => `batch ${b} ms/item`), `Gain at batch ${largest} vs 1`];
  const rows = settings.families.map((family) => {
    const totals = new Map<number, { executions: number; ms: number }>();
    for (const p of points.filter((p) => p.key.family === family)) {
      for (const [size, b] of Object.entries(p.metrics.server.byBatch)) {
        const t = totals.get(Number(size)) ?? { executions: 0, ms: 0 };
        totals.set(Number(size), { executions: t.executions + b.executions, ms: t.ms + b.executions * b.computeMs });
      }
    }
    const perItem = (size: number): number | undefined => {
      const t = totals.get(size);
      return t && t.executions > 0 ? t.ms / t.executions / size : undefined;
    };
    const gain = (perItem(1) ?? NaN) / (perItem(largest) ?? NaN);
    return [family, ...settings.batchSizes.map((b) => num(perItem(b), formatMs)), num(gain, (n) => `${n.toFixed(2)}×`)];
  });
  return [
    "- Mean compute (input + infer + output) per execution ÷ batch size, from the statistics' batch_stats over every measured window (– where no execution had exactly that size).",
    '',
    markdownTable(
      headers,
      rows,
      headers.map((_, i): Align => (i === 0 ? 'left' : 'right')),
    ),
  ];
}

function targetSection(keys: readonly PointKey[], find: Find, settings: ReportSettings): string[] {
  const at = keys.filter((k) => k.concurrency === settings.targetConcurrency);
  if (at.length === 0) return [`_Concurrency ${settings.targetConcurrency} was not in the sweep, so the target was not checked._`];
  const delayMs = settings.queueDelayUs / 1000;
  const lines = [
    `- Throughput: batched ≥ ${settings.targetRatio}× unbatched. Latency: batched p99 ≤ queue delay (${formatMs(delayMs)} ms) + 2 × the batched model's mean compute per execution, from the statistics.`,
    "- Compute gain per item: the unbatched model's compute per execution (batch 1) ÷ the batched model's compute per item at its average batch, i.e. the most batching could give if compute were all there is. Unbatched busy: the share of the window its instances spent computing. With the unbatched model near 100% busy the server is compute-bound, and the throughput ratio cannot exceed the compute gain per item.",
    '',
  ];
  const headers = [
    'Model',
    'Protocol',
    'Batched infer/s',
    'Unbatched infer/s',
    'Ratio',
    `≥ ${settings.targetRatio}×`,
    'Batched p99 ms',
    'p99 bound ms',
    'p99 ok',
    'Compute gain per item',
    'Unbatched busy',
  ];
  const align: Align[] = ['left', 'left', 'right', 'right', 'right', 'left', 'right', 'right', 'left', 'right', 'right'];
  const rows = at.map((key) => {
    const b = find(key, 'batched');
    const u = find(key, 'unbatched');
    if (!b || !u) return [key.family, key.protocol, num(b?.throughput, formatRate), num(u?.throughput, formatRate), '–', 'not measured', '–', '–', '–', '–', '–'];
    const ratio = b.throughput / u.throughput;
    const bound = delayMs + 2 * b.server.batchComputeMs;
    const gain = u.server.batchComputeMs / (b.server.batchComputeMs / b.server.avgBatch);
    const busy = (u.throughput * u.server.batchComputeMs) / 1000;
    return [
      key.family,
      key.protocol,
      formatRate(b.throughput),
      formatRate(u.throughput),
      `${ratio.toFixed(2)}×`,
      verdict(ratio >= settings.targetRatio),
      formatMs(b.p99Ms),
      num(bound, formatMs),
      verdict(b.p99Ms <= bound),
      num(gain, (n) => `${n.toFixed(2)}×`),
      num(busy, (n) => `${Math.round(n * 100)}%`),
    ];
  });
  return [...lines, markdownTable(headers, rows, align)];
}

function verdict(ok: boolean): string {
  return ok ? 'met' : 'NOT met';
}

const metricsOf = (r: CaseResult): PointMetrics | undefined => r.metrics as PointMetrics | undefined;

export function chartsFor(families: readonly string[], size: string): ChartRequest[] {
  return families.flatMap((family): ChartRequest[] => {
    const base = {
      kind: 'line' as const,
      xLabel: 'concurrency (requests outstanding)',
      logX: true,
      select: (r: CaseResult) => r.params['family'] === family && metricsOf(r) !== undefined,
      seriesOf: (r: CaseResult) => `${String(r.params['protocol'])} ${r.variant}`,
      x: (r: CaseResult) => Number(r.params['concurrency']),
    };
    return [
      { ...base, file: `${family}-throughput.svg`, title: `${family} ${size}: throughput vs concurrency`, yLabel: 'infer/s', y: (r) => metricsOf(r)?.throughput ?? NaN },
      { ...base, file: `${family}-p99.svg`, title: `${family} ${size}: client p99 latency vs concurrency`, yLabel: 'p99 ms', y: (r) => metricsOf(r)?.p99Ms ?? NaN },
    ];
  });
}
