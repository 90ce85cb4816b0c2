// From the streaming scenario's recorded runs to per-case metrics, charts and the results table:
// tokens/s per transport (the harness's throughput at the median run), the server's main-thread
// CPU per delivered token and its difference from non-streaming, the wall-clock difference per
// token, and /v2/health/ready and /metrics scrape latency under load.

import type { ChartRequest } from '../../harness/charts.js';
import { formatMs, formatRate, markdownTable, type Align } from '../../harness/markdown.js';
import type { ScenarioConclusion } from '../../harness/scenario.js';
import { percentile } from '../../harness/stats.js';
import type { CaseResult } from '../../harness/types.js';
import type { Transport } from './transports.js';

export const BASELINE: Transport = 'non-streaming';

/** One measured run of one transport. */
export interface RecordedRun {
  readonly tokens: number;
  readonly messages: number;
  readonly requests: number;
  /** Undefined without /proc. */
  readonly mainCpuMs: number | undefined;
  readonly processCpuMs: number | undefined;
  readonly healthMs: readonly number[];
  readonly healthFailures: number;
  readonly metricsMs: readonly number[];
  readonly metricsFailures: number;
  /** Request i's text, to compare transports (greedy: all must agree). */
  readonly texts: readonly string[];
}

/** By case id. */
export type Recorded = Map<string, { transport: Transport; runs: RecordedRun[] }>;

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

interface TransportMetrics {
  tokensPerRun: number;
  messagesPerRequest: number;
  tokPerSec: number | null;
  mainCpuUsPerToken: number | null;
  processCpuUsPerToken: number | null;
  mainCpuUsPerTokenVsBaseline: number | null;
  wallUsPerTokenVsBaseline: number | null;
  healthP50Ms: number | null;
  healthP99Ms: number | null;
  healthMaxMs: number | null;
  healthPolls: number;
  healthFailures: number;
  metricsP50Ms: number | null;
  metricsP99Ms: number | null;
  metricsMaxMs: number | null;
  metricsPolls: number;
  metricsFailures: number;
  textsMatchingBaseline: string;
}

export function conclude(results: readonly CaseResult[], recorded: Recorded): ScenarioConclusion {
  const rows = measure(results, recorded);
  const base = rows.find((m) => m.transport === BASELINE);
  const metrics = new Map<string, Record<string, unknown>>();
  for (const row of rows) {
    const perToken = (a: number | null, b: number | null | undefined): number | null => (a === null || b === null || b === undefined ? null : a - b);
    const wall = (r: number | null): number | null => (r ? 1e6 / r : null);
    const full: TransportMetrics = {
      ...row.metrics,
      mainCpuUsPerTokenVsBaseline: perToken(row.metrics.mainCpuUsPerToken, base?.metrics.mainCpuUsPerToken),
      wallUsPerTokenVsBaseline: base ? perToken(wall(row.metrics.tokPerSec), wall(base.metrics.tokPerSec)) : null,
      textsMatchingBaseline: base ? matching(row.texts, base.texts) : 'no baseline',
    };
    metrics.set(row.id, full as unknown as Record<string, unknown>);
  }
  return { metrics, results: resultsTable(rows.map((r) => ({ transport: r.transport, m: metrics.get(r.id) as unknown as TransportMetrics }))) };
}

function measure(results: readonly CaseResult[], recorded: Recorded) {
  return results.flatMap((result) => {
    const entry = recorded.get(result.id);
    if (!entry || entry.runs.length === 0) return [];
    const runs = entry.runs;
    const tokens = sum(runs.map((r) => r.tokens));
    const cpu = (pick: (r: RecordedRun) => number | undefined): number | null => {
      const values = runs.map(pick);
      return values.every((v) => v !== undefined) ? (sum(values as number[]) * 1000) / tokens : null;
    };
    const health = runs.flatMap((r) => r.healthMs).sort((a, b) => a - b);
    const at = (p: number): number | null => (health.length > 0 ? percentile(health, p) : null);
    const scrapes = runs.flatMap((r) => r.metricsMs).sort((a, b) => a - b);
    const scrapeAt = (p: number): number | null => (scrapes.length > 0 ? percentile(scrapes, p) : null);
    const metrics: Omit<TransportMetrics, 'mainCpuUsPerTokenVsBaseline' | 'wallUsPerTokenVsBaseline' | 'textsMatchingBaseline'> = {
      tokensPerRun: tokens / runs.length,
      messagesPerRequest: sum(runs.map((r) => r.messages)) / sum(runs.map((r) => r.requests)),
      tokPerSec: result.throughput?.perSecond ?? null,
      mainCpuUsPerToken: cpu((r) => r.mainCpuMs),
      processCpuUsPerToken: cpu((r) => r.processCpuMs),
      healthP50Ms: at(50),
      healthP99Ms: at(99),
      healthMaxMs: health.at(-1) ?? null,
      healthPolls: health.length,
      healthFailures: sum(runs.map((r) => r.healthFailures)),
      metricsP50Ms: scrapeAt(50),
      metricsP99Ms: scrapeAt(99),
      metricsMaxMs: scrapes.at(-1) ?? null,
      metricsPolls: scrapes.length,
      metricsFailures: sum(runs.map((r) => r.metricsFailures)),
    };
    return [{ id: result.id, transport: entry.transport, texts: runs[0]!.texts, metrics }];
  });
}

/** `k/n` requests of the first measured run whose text equals the baseline's for the same prompt. */
function matching(texts: readonly string[], baseline: readonly string[]): string {
  const same = texts.filter((t, i) => t === baseline[i]).length;
  return `${same}/${texts.length}`;
}

const num = (value: number | null, format: (v: number) => string = (v) => v.toFixed(1)): string => (value === null ? 'n/a' : format(value));
const signed = (value: number | null): string => (value === null ? 'n/a' : `${value >= 0 ? '+' : ''}${value.toFixed(1)}`);

function resultsTable(rows: readonly { transport: Transport; m: TransportMetrics }[]): string {
  const headers = [
    'Transport',
    'Output tok/s',
    'Messages / request',
    'Main-thread CPU µs/token',
    `Δ main CPU vs ${BASELINE} µs/token`,
    'Process CPU µs/token',
    `Δ wall vs ${BASELINE} µs/token`,
    'Health p50 / p99 / max ms (polls)',
    '/metrics p50 / p99 / max ms (scrapes)',
    `Same text as ${BASELINE}`,
  ];
  const align: Align[] = ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'];
  const latencies = (p50: number | null, p99: number | null, max: number | null, polls: number, failures: number): string =>
    `${num(p50, formatMs)} / ${num(p99, formatMs)} / ${num(max, formatMs)} (${polls}${failures > 0 ? `, ${failures} failed` : ''})`;
  const body = rows.map(({ transport, m }) => [
    transport,
    num(m.tokPerSec, formatRate),
    num(m.messagesPerRequest),
    num(m.mainCpuUsPerToken),
    signed(m.mainCpuUsPerTokenVsBaseline),
    num(m.processCpuUsPerToken),
    signed(m.wallUsPerTokenVsBaseline),
    latencies(m.healthP50Ms, m.healthP99Ms, m.healthMaxMs, m.healthPolls, m.healthFailures),
    latencies(m.metricsP50Ms, m.metricsP99Ms, m.metricsMaxMs, m.metricsPolls, m.metricsFailures),
    m.textsMatchingBaseline,
  ]);
  return markdownTable(headers, body, align);
}

export function streamingCharts(label: string): ChartRequest[] {
  const metric =
    (name: keyof TransportMetrics) =>
    (r: CaseResult): number =>
      (r.metrics?.[name] as number | null | undefined) ?? 0;
  const common = { kind: 'bar' as const, select: () => true, seriesOf: (r: CaseResult) => r.variant };
  return [
    { ...common, file: 'streaming-throughput.svg', title: `${label}: output tokens/s per transport`, yLabel: 'output tokens/s', value: (r) => r.throughput?.perSecond ?? 0 },
    { ...common, file: 'streaming-main-cpu.svg', title: `${label}: server main-thread CPU per token`, yLabel: 'µs CPU / token', value: metric('mainCpuUsPerToken') },
    { ...common, file: 'streaming-health.svg', title: `${label}: GET /v2/health/ready under load, p99`, yLabel: 'ms', value: metric('healthP99Ms') },
    { ...common, file: 'streaming-metrics.svg', title: `${label}: GET /metrics scrape under load, p99`, yLabel: 'ms', value: metric('metricsP99Ms') },
  ];
}
