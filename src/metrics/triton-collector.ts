// Triton's per-model metrics, computed at scrape time from each served model version's
// statistics snapshot: the same numbers /v2/models/{m}/stats reports, by construction. Nothing
// here is called on the request path, and nothing here changes what the server does.

import type { Registry } from 'prom-client';
import type { FailureReason } from '../batcher/stats.js';
import type { ModelStatistics, StatisticDuration } from '../contracts/inference-service.js';
import { FAILURE_REASONS, PROCESS_METRICS, TRITON_METRICS, type MetricDefinition } from './metric-definitions.js';
import { SnapshotFamily, histogramSamples, type Labels, type Sample } from './snapshot-family.js';

/** What the collectors read of a served model version (ServedModel satisfies it). */
export interface ModelSnapshotSource {
  statistics(): ModelStatistics;
  /** Failed requests by reason; without it every failure counts as OTHER. */
  failures?(): Readonly<Record<FailureReason, number>>;
  /** Requests queued, not yet executing; without it the gauge is not exported for the model. */
  pendingRequests?(): number;
  /** One entry per worker thread (instance or engine), true while it runs. */
  workersAlive?(): readonly boolean[];
  /** Its supervisor's count of worker restarts; without it the counter is not exported for the model. */
  supervision?(): { readonly restarts: number };
  /** The precision variant it runs; without it the `precision` label is empty. */
  readonly variant?: { readonly precision: string };
  /** True when its answers go through the response cache: the per-model cache series are exported for it. */
  readonly responseCacheEnabled?: boolean;
}

/** One model version as read at one instant. */
export interface ModelReading {
  readonly statistics: ModelStatistics;
  readonly failures: Readonly<Record<FailureReason, number>>;
  readonly pending: number | undefined;
  readonly workersAlive: readonly boolean[];
  readonly restarts: number | undefined;
  readonly precision: string;
  readonly cached: boolean;
}

export function readModel(source: ModelSnapshotSource): ModelReading {
  const statistics = source.statistics();
  const failures = source.failures?.() ?? { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: statistics.inference_stats.fail.count };
  return {
    statistics,
    failures,
    pending: source.pendingRequests?.(),
    workersAlive: source.workersAlive?.() ?? [],
    restarts: source.supervision?.().restarts,
    precision: source.variant?.precision ?? '',
    cached: source.responseCacheEnabled === true,
  };
}

const labelsOf = (r: ModelReading): Labels => ({ model: r.statistics.name, version: r.statistics.version, precision: r.precision });
/** Triton's duration counters are whole microseconds. */
const micros = (d: StatisticDuration): number => Math.floor(d.ns / 1000);

type TritonKey = keyof typeof TRITON_METRICS;

/** Every Triton sample of one model version, by metric. */
export function tritonSamples(reading: ModelReading): Record<TritonKey, Sample[]> {
  const s = reading.statistics;
  const labels = labelsOf(reading);
  const one = (value: number): Sample[] => [{ labels, value }];
  const ifCached = (value: number): Sample[] => (reading.cached ? one(value) : []);
  // batch_stats counts executions per batch size; compute_infer is recorded once per execution.
  const batchCounts = new Map(s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]));
  return {
    requestSuccess: one(s.inference_stats.success.count),
    requestFailure: FAILURE_REASONS.map((reason) => ({ labels: { ...labels, reason }, value: reading.failures[reason] })),
    inferenceCount: one(s.inference_count),
    execCount: one(s.execution_count),
    pendingRequests: reading.pending === undefined ? [] : one(reading.pending),
    requestDuration: one(micros(s.inference_stats.success)),
    queueDuration: one(micros(s.inference_stats.queue)),
    computeInputDuration: one(micros(s.inference_stats.compute_input)),
    computeInferDuration: one(micros(s.inference_stats.compute_infer)),
    computeOutputDuration: one(micros(s.inference_stats.compute_output)),
    cacheHits: ifCached(s.inference_stats.cache_hit.count),
    cacheMisses: ifCached(s.inference_stats.cache_miss.count),
    cacheHitDuration: ifCached(micros(s.inference_stats.cache_hit)),
    cacheMissDuration: ifCached(micros(s.inference_stats.cache_miss)),
    batchSize: histogramSamples(labels, TRITON_METRICS.batchSize.buckets, batchCounts),
  };
}

export function workerSamples(reading: ModelReading): Sample[] {
  const labels = labelsOf(reading);
  return reading.workersAlive.map((alive, i) => ({ labels: { ...labels, worker: String(i) }, value: alive ? 1 : 0 }));
}

export function restartSamples(reading: ModelReading): Sample[] {
  return reading.restarts === undefined ? [] : [{ labels: labelsOf(reading), value: reading.restarts }];
}

/**
 * Registers the Triton families, worker liveness and restarts on `registry`; `models` lists the served
 * versions at scrape time (the model manager's loaded versions).
 */
export function registerTritonMetrics(registry: Registry, models: () => readonly ModelSnapshotSource[]): void {
  const scrape = scrapeReadings(models);
  for (const key of Object.keys(TRITON_METRICS) as TritonKey[]) {
    const definition: MetricDefinition = TRITON_METRICS[key];
    new SnapshotFamily(definition, () => scrape().flatMap((r) => r.samples[key])).register(registry);
  }
  new SnapshotFamily(PROCESS_METRICS.workerAlive, () => scrape().flatMap((r) => workerSamples(r.reading))).register(registry);
  new SnapshotFamily(PROCESS_METRICS.workerRestarts, () => scrape().flatMap((r) => restartSamples(r.reading))).register(registry);
}

interface ScrapedModel {
  readonly reading: ModelReading;
  readonly samples: Record<TritonKey, Sample[]>;
}

/**
 * Every served version read, and its Triton samples computed, once per scrape: the registry asks
 * each family for its samples in one synchronous pass, so the first family's call reads the
 * snapshots and the rest of the pass reuses them (one consistent picture, and 13 families no
 * longer copy every model's statistics 13 times). The reuse ends with the pass — at the next
 * microtask — so a later scrape reads afresh; a registry that asked across turns would only read
 * more often, never stale.
 */
function scrapeReadings(models: () => readonly ModelSnapshotSource[]): () => readonly ScrapedModel[] {
  let current: readonly ScrapedModel[] | null = null;
  return () => {
    if (current) return current;
    current = models().map((source) => {
      const reading = readModel(source);
      return { reading, samples: tritonSamples(reading) };
    });
    queueMicrotask(() => {
      current = null;
    });
    return current;
  };
}
