// What the dashboard plots, computed from two consecutive GET /ui/api/status snapshots: rates
// and windowed percentiles are differences of the server's cumulative counters and histogram
// buckets, so every chart point describes the last poll interval, not the server's lifetime.
// Pure (no DOM): the unit tests run it under Node.

import type { MetricSample, UiStatus } from '../../src/contracts/ui-status.js';
import { LLM_COUNTERS, LLM_GAUGES, LLM_HISTOGRAMS, LLM_PREFIX, TRITON_METRICS } from '../../src/metrics/metric-definitions.js';

/** GET /ui/api/status's answer (declared once, in src/contracts/ui-status.ts). */
export type Status = UiStatus;

export interface DashboardPoint {
  readonly time_ms: number;
  readonly outputTokensPerSec: number;
  readonly running: number;
  readonly waiting: number;
  /** Largest KV-cache usage over the loaded LLMs, percent. */
  readonly kvUsagePercent: number;
  /** Prefix-cache hits over lookups in the interval, percent; null when nothing was looked up. */
  readonly prefixHitPercent: number | null;
  readonly ttftMs: Quantiles;
  readonly interTokenMs: Quantiles;
  /** Mean items per execution in the interval, per classic model. */
  readonly batchSize: Readonly<Record<string, number | null>>;
  /** Mean queue time of the interval's successful requests, ms, per classic model. */
  readonly queueMs: Readonly<Record<string, number | null>>;
  readonly eventLoopLagP99Ms: number | null;
  /** Speculative decoding over the interval: tokens proposed and accepted per verify step (null when nothing was checked). */
  readonly speculation: SpeculationPoint;
}

export interface SpeculationPoint {
  /** Mean proposed tokens per checked proposal. */
  readonly proposedPerDraft: number | null;
  /** Mean accepted tokens per checked proposal: vLLM's mean acceptance length − 1. */
  readonly acceptedPerDraft: number | null;
}

export interface Quantiles {
  readonly p50: number | null;
  readonly p95: number | null;
}

/** An LLM series' sample name as the server exports it (the definitions carry the name after the prefix). */
const llm = (definition: { readonly name: string }): string => `${LLM_PREFIX}${definition.name}`;

type LabelFilter = (labels: MetricSample['labels']) => boolean;

function samplesNamed(status: Status, name: string): MetricSample[] {
  return status.metrics.flatMap((family) => family.samples.filter((sample) => sample.name === name));
}

/** The sum of every sample called `name` (whose labels pass `where`). */
export function total(status: Status, name: string, where: LabelFilter = () => true): number {
  return samplesNamed(status, name)
    .filter((sample) => where(sample.labels))
    .reduce((sum, sample) => sum + sample.value, 0);
}

function largest(status: Status, name: string): number {
  return samplesNamed(status, name).reduce((max, sample) => Math.max(max, sample.value), 0);
}

/** Grows between snapshots, or was reset (a reload): then the current value is the interval's. */
const delta = (current: number, previous: number): number => (current >= previous ? current - previous : current);

/**
 * The q-quantile of a cumulative histogram ([upper bound, count ≤ bound], ascending, +Inf last),
 * interpolated linearly inside the bucket as Prometheus's histogram_quantile does; null when empty.
 */
export function bucketQuantile(buckets: readonly (readonly [number, number])[], q: number): number | null {
  const count = buckets.at(-1)?.[1] ?? 0;
  if (count <= 0) return null;
  const rank = q * count;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [bound, cumulative] of buckets) {
    if (cumulative >= rank) {
      if (!Number.isFinite(bound)) return lowerBound;
      const inBucket = cumulative - lowerCount;
      return inBucket === 0 ? bound : lowerBound + ((bound - lowerBound) * (rank - lowerCount)) / inBucket;
    }
    lowerBound = bound;
    lowerCount = cumulative;
  }
  return lowerBound;
}

/** A histogram's buckets over the interval, summed across its label sets. */
function intervalBuckets(previous: Status, current: Status, family: string): [number, number][] {
  const byBound = (status: Status) => {
    const counts = new Map<number, number>();
    for (const sample of samplesNamed(status, `${family}_bucket`)) {
      const le = sample.labels['le'];
      const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
      counts.set(bound, (counts.get(bound) ?? 0) + sample.value);
    }
    return counts;
  };
  const before = byBound(previous);
  return [...byBound(current)].map(([bound, count]): [number, number] => [bound, delta(count, before.get(bound) ?? 0)]).sort((a, b) => a[0] - b[0]);
}

function intervalQuantiles(previous: Status, current: Status, family: string, scale: number): Quantiles {
  const buckets = intervalBuckets(previous, current, family);
  const at = (q: number) => {
    const value = bucketQuantile(buckets, q);
    return value === null ? null : value * scale;
  };
  return { p50: at(0.5), p95: at(0.95) };
}

/** The classic models in `name`'s (Triton-labelled) samples: LLMs report there too, but no dynamic batcher forms their batches. */
function tritonModels(status: Status, name: string): string[] {
  const llms = new Set(samplesNamed(status, llm(LLM_GAUGES.numRunning)).map((sample) => String(sample.labels['model_name'])));
  return [...new Set(samplesNamed(status, name).map((sample) => String(sample.labels['model'])))].filter((model) => !llms.has(model)).sort();
}

/** Per model, the interval's Δnumerator / Δdenominator × scale (null when the denominator did not move). */
function perModelRatio(previous: Status, current: Status, numerator: string, denominator: string, scale: number): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const model of tritonModels(current, denominator)) {
    const of: LabelFilter = (labels) => labels['model'] === model;
    const count = delta(total(current, denominator, of), total(previous, denominator, of));
    out[model] = count > 0 ? (delta(total(current, numerator, of), total(previous, numerator, of)) / count) * scale : null;
  }
  return out;
}

function speculationPoint(counted: (name: string) => number): SpeculationPoint {
  const drafts = counted(llm(LLM_COUNTERS.specDecodeNumDrafts));
  if (drafts <= 0) return { proposedPerDraft: null, acceptedPerDraft: null };
  return {
    proposedPerDraft: counted(llm(LLM_COUNTERS.specDecodeNumDraftTokens)) / drafts,
    acceptedPerDraft: counted(llm(LLM_COUNTERS.specDecodeNumAcceptedTokens)) / drafts,
  };
}

export function dashboardPoint(previous: Status, current: Status): DashboardPoint {
  const seconds = Math.max((current.time_ms - previous.time_ms) / 1000, 1e-3);
  const counted = (name: string) => delta(total(current, name), total(previous, name));
  const lookups = counted(llm(LLM_COUNTERS.prefixCacheQueries));
  const lag = samplesNamed(current, 'nodejs_eventloop_lag_p99_seconds')[0];
  return {
    time_ms: current.time_ms,
    outputTokensPerSec: counted(llm(LLM_COUNTERS.generationTokens)) / seconds,
    running: total(current, llm(LLM_GAUGES.numRunning)),
    waiting: total(current, llm(LLM_GAUGES.numWaiting)),
    kvUsagePercent: largest(current, llm(LLM_GAUGES.kvCacheUsage)) * 100,
    prefixHitPercent: lookups > 0 ? (counted(llm(LLM_COUNTERS.prefixCacheHits)) / lookups) * 100 : null,
    ttftMs: intervalQuantiles(previous, current, llm(LLM_HISTOGRAMS.timeToFirstToken), 1000),
    interTokenMs: intervalQuantiles(previous, current, llm(LLM_HISTOGRAMS.interTokenLatency), 1000),
    batchSize: perModelRatio(previous, current, `${TRITON_METRICS.batchSize.name}_sum`, `${TRITON_METRICS.batchSize.name}_count`, 1),
    queueMs: perModelRatio(previous, current, TRITON_METRICS.queueDuration.name, TRITON_METRICS.requestSuccess.name, 1e-3),
    eventLoopLagP99Ms: lag === undefined ? null : lag.value * 1000,
    speculation: speculationPoint(counted),
  };
}
