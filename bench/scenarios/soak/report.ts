// A soak's verdict: outcomes per actor, the targets (no crash, no engine restart, no failed good
// request, no bad request answered 5xx, no KV block held at the end, memory flat after warm-up),
// and the time series (RSS, event-loop lag, health latency) as charts.

import type { ChartRequest } from '../../harness/charts.js';
import { percentile } from '../../harness/stats.js';
import type { CaseResult } from '../../harness/types.js';
import type { Sample } from './monitor.js';
import { totalsByKind, type ActorRow } from './tally.js';

export interface SoakRecord {
  readonly durationS: number;
  readonly rows: readonly ActorRow[];
  readonly samples: readonly Sample[];
  /** The server process exited by itself during the soak. */
  readonly serverCrashed: boolean;
  /** After the load: KV usage once the engine had nothing left (0 = every block returned). */
  readonly kvUsageAfter: number | null;
  readonly settledAfterS: number | null;
  /** What the engine still held when it never became idle; null when it did. */
  readonly notIdle: string | null;
}

export interface MemoryTrend {
  /** Median RSS over the first tenth of the samples after warm-up, and over the last tenth. */
  readonly afterWarmupMiB: number;
  readonly endMiB: number;
  readonly growthPct: number;
}

/** Warm-up is the first fifth of the run; memory is flat when the end is within noise of the start after it. */
export function memoryTrend(samples: readonly Sample[]): MemoryTrend | null {
  const rss = samples.map((s) => s.rssMiB).filter((v): v is number => v !== null);
  if (rss.length < 10) return null;
  const afterWarmup = rss.slice(Math.floor(rss.length / 5));
  const tenth = Math.max(1, Math.floor(afterWarmup.length / 10));
  const median = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    );
  const start = median(afterWarmup.slice(0, tenth));
  const end = median(afterWarmup.slice(-tenth));
  return { afterWarmupMiB: start, endMiB: end, growthPct: ((end - start) / start) * 100 };
}

const fmt = (value: number | null | undefined, digits = 1): string => (value === null || value === undefined ? 'n/a' : value.toFixed(digits));

function quantiles(values: readonly (number | null)[]): { p50: number; p99: number; max: number } | null {
  const sorted = values.filter((v): v is number => v !== null).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1)! };
}

export function soakMetrics(record: SoakRecord): Record<string, unknown> {
  const totals = totalsByKind(record.rows);
  const memory = memoryTrend(record.samples);
  const restarts = Math.max(0, ...record.samples.map((s) => s.restarts));
  return {
    durationS: record.durationS,
    goodRequests: totals.good.total,
    failedGoodRequests: totals.good.failed,
    badRequests: totals.bad.total,
    badRequestsNotRefused: totals.bad.failed,
    chaosClients: totals.chaos.total,
    chaosFailures: totals.chaos.failed,
    serverCrashed: record.serverCrashed,
    engineRestarts: restarts,
    workersEverDown: record.samples.some((s) => s.workersAlive === 0),
    kvUsageAfter: record.kvUsageAfter,
    settledAfterS: record.settledAfterS,
    notIdle: record.notIdle,
    memory,
    eventLoopLagP99Ms: quantiles(record.samples.map((s) => s.lagP99Ms)),
    eventLoopLagMaxMs: quantiles(record.samples.map((s) => s.lagMaxMs)),
    healthMs: quantiles(record.samples.map((s) => s.healthMs)),
    healthNot200: record.samples.filter((s) => s.healthStatus !== 200).length,
    rows: record.rows,
    samples: record.samples,
  };
}

export function soakResults(record: SoakRecord): string {
  const m = soakMetrics(record) as ReturnType<typeof soakMetrics> & { memory: MemoryTrend | null };
  const mark = (ok: boolean): string => (ok ? 'met' : '**missed**');
  const memory = m.memory;
  const lines = [
    '## Targets',
    '',
    '| target | measured | |',
    '|---|---|---|',
    `| server never crashes | ${record.serverCrashed ? 'crashed' : 'no crash'} | ${mark(!record.serverCrashed)} |`,
    `| 0 engine restarts | ${m.engineRestarts as number} | ${mark(m.engineRestarts === 0)} |`,
    `| 0 failed good requests | ${m.failedGoodRequests as number} of ${m.goodRequests as number} | ${mark(m.failedGoodRequests === 0)} |`,
    `| every bad request refused with a 4xx | ${(m.badRequests as number) - (m.badRequestsNotRefused as number)} of ${m.badRequests as number} | ${mark(m.badRequestsNotRefused === 0)} |`,
    `| 0 KV blocks held once idle | usage ${fmt(record.kvUsageAfter, 4)}${record.settledAfterS === null ? ` (never idle within 60 s: ${record.notIdle ?? ''})` : ` after ${fmt(record.settledAfterS)} s`} | ${mark(record.kvUsageAfter === 0)} |`,
    `| memory flat after warm-up | ${memory ? `${fmt(memory.afterWarmupMiB)} → ${fmt(memory.endMiB)} MiB (${memory.growthPct >= 0 ? '+' : ''}${fmt(memory.growthPct)}%)` : 'n/a'} | ${memory ? mark(memory.growthPct < 10) : 'n/a'} |`,
    '',
    '## Outcomes by client',
    '',
    '| client | kind | requests | failed | outcomes |',
    '|---|---|---:|---:|---|',
    ...record.rows.map(
      (r) =>
        `| ${r.actor} | ${r.kind} | ${r.total} | ${r.failed} | ${r.outcomes
          .map(([label, n]) => `${label} × ${n}`)
          .join('; ')
          .replace(/\|/g, '\\|')} |`,
    ),
    '',
    '## Server over time',
    '',
    '| | p50 | p99 | max |',
    '|---|---:|---:|---:|',
    ...(['eventLoopLagP99Ms', 'eventLoopLagMaxMs', 'healthMs'] as const).map((key) => {
      const q = m[key] as { p50: number; p99: number; max: number } | null;
      const name = { eventLoopLagP99Ms: 'event-loop lag p99 per second (ms)', eventLoopLagMaxMs: 'event-loop lag max per second (ms)', healthMs: 'GET /v2/health/ready (ms)' }[key];
      return `| ${name} | ${fmt(q?.p50)} | ${fmt(q?.p99)} | ${fmt(q?.max)} |`;
    }),
    '',
  ];
  return lines.join('\n');
}

const seriesOf = (result: CaseResult, pick: (s: Sample) => number | null): (readonly [number, number])[] =>
  ((result.metrics?.['samples'] ?? []) as Sample[]).flatMap((s) => {
    const y = pick(s);
    return y === null ? [] : [[s.t, y] as const];
  });

export function soakCharts(title: string): ChartRequest[] {
  const select = (r: CaseResult) => r.group === 'soak';
  return [
    {
      kind: 'timeline',
      file: 'soak-rss.svg',
      title: `Resident memory, ${title}`,
      xLabel: 'seconds',
      yLabel: 'RSS (MiB)',
      select,
      seriesOf: () => 'server',
      lines: (r) => [{ name: 'RSS', points: seriesOf(r, (s) => s.rssMiB) }],
    },
    {
      kind: 'timeline',
      file: 'soak-lag.svg',
      title: `Event-loop lag and health latency, ${title}`,
      xLabel: 'seconds',
      yLabel: 'ms',
      select,
      seriesOf: () => 'server',
      lines: (r) => [
        { name: 'lag p99', points: seriesOf(r, (s) => s.lagP99Ms) },
        { name: 'lag max', points: seriesOf(r, (s) => s.lagMaxMs) },
        { name: 'health', points: seriesOf(r, (s) => s.healthMs) },
      ],
    },
  ];
}
