// Per model version statistics, counted the way Triton's statistics extension reports them. Plain
// data in, snapshots out: the stats endpoints and the metrics module read snapshot() only.

import type { ExecutionTimings } from '../contracts/execution.js';
import type { ModelStatistics, StatisticDuration } from '../contracts/inference-service.js';

/** The `reason` label of nv_inference_request_failure. */
export type FailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';

/** One successful request; all durations in ns. */
export interface RequestDurations {
  /** Arrival to response. */
  readonly requestNs: number;
  /** Arrival to the start of its execution. */
  readonly queueNs: number;
  /** The whole batch's compute durations: every request in a batch lived through all of them. */
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
}

interface BatchEntry {
  readonly compute_input: StatisticDuration;
  readonly compute_infer: StatisticDuration;
  readonly compute_output: StatisticDuration;
}

type InferStatKey = keyof ModelStatistics['inference_stats'];
const INFER_STAT_KEYS: readonly InferStatKey[] = ['success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output', 'cache_hit', 'cache_miss'];

const zero = (): StatisticDuration => ({ count: 0, ns: 0 });
const add = (d: StatisticDuration, ns: number): void => {
  d.count += 1;
  d.ns += Math.max(0, Math.round(ns));
};
const copy = (d: StatisticDuration): StatisticDuration => ({ count: d.count, ns: d.ns });

export class ModelStatsRecorder {
  private readonly inference = Object.fromEntries(INFER_STAT_KEYS.map((k) => [k, zero()])) as Record<InferStatKey, StatisticDuration>;
  private readonly batches = new Map<number, BatchEntry>();
  private readonly failureCounts: Record<FailureReason, number> = { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 0 };
  private inferenceCount = 0;
  private executionCount = 0;
  private lastInferenceMs = 0;

  constructor(
    readonly name: string,
    readonly version: string,
  ) {}

  /** A request answered: counts once in success, queue and each compute phase. */
  recordSuccess(d: RequestDurations, epochMs: number): void {
    add(this.inference.success, d.requestNs);
    add(this.inference.queue, d.queueNs);
    add(this.inference.compute_input, d.computeInputNs);
    add(this.inference.compute_infer, d.computeInferNs);
    add(this.inference.compute_output, d.computeOutputNs);
    this.lastInferenceMs = Math.max(this.lastInferenceMs, epochMs);
  }

  /** A request failed (rejected, timed out, cancelled or failed in execution) after `requestNs`. */
  recordFailure(requestNs: number, reason: FailureReason): void {
    add(this.inference.fail, requestNs);
    this.failureCounts[reason] += 1;
  }

  /** One successful execution of `batchSize` items (the inference count grows by that). */
  recordExecution(batchSize: number, timings: ExecutionTimings, epochMs: number): void {
    this.inferenceCount += batchSize;
    this.executionCount += 1;
    let entry = this.batches.get(batchSize);
    if (entry === undefined) {
      entry = { compute_input: zero(), compute_infer: zero(), compute_output: zero() };
      this.batches.set(batchSize, entry);
    }
    add(entry.compute_input, timings.computeInputNs);
    add(entry.compute_infer, timings.computeInferNs);
    add(entry.compute_output, timings.computeOutputNs);
    this.lastInferenceMs = Math.max(this.lastInferenceMs, epochMs);
  }

  /** A copy in the statistics extension's shape; batch_stats ascending by batch size. */
  snapshot(): ModelStatistics {
    const batchStats = [...this.batches.entries()]
      .sort(([a], [b]) => a - b)
      .map(([size, e]) => ({ batch_size: size, compute_input: copy(e.compute_input), compute_infer: copy(e.compute_infer), compute_output: copy(e.compute_output) }));
    return {
      name: this.name,
      version: this.version,
      last_inference: this.lastInferenceMs,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: Object.fromEntries(INFER_STAT_KEYS.map((k) => [k, copy(this.inference[k])])) as Record<InferStatKey, StatisticDuration>,
      batch_stats: batchStats,
      memory_usage: [],
    };
  }

  /** Failed requests by metric reason (the statistics extension has only the total). */
  failures(): Readonly<Record<FailureReason, number>> {
    return { ...this.failureCounts };
  }
}

/**
 * A model version's response cache counts, laid over its statistics: Triton counts a hit in
 * success and queue (and last_inference) but in no compute phase, execution or inference count,
 * and a hit's and a miss's cache time in cache_hit / cache_miss (a miss: the lookup and the
 * insertion; a request that then fails is counted by the failure alone).
 */
export class CacheStatsRecorder {
  private readonly hits = zero();
  private readonly misses = zero();
  private readonly hitRequests = zero();
  private readonly hitQueue = zero();
  private lastHitMs = 0;

  /** A request answered from the cache: `requestNs` arrival to answer, `queueNs` arrival to lookup, `lookupNs` the lookup and copy. */
  recordHit(requestNs: number, queueNs: number, lookupNs: number, epochMs: number): void {
    add(this.hits, lookupNs);
    add(this.hitRequests, requestNs);
    add(this.hitQueue, queueNs);
    this.lastHitMs = Math.max(this.lastHitMs, epochMs);
  }

  /** A request executed after a miss and its response stored (or found too large): the cache's share of its time. */
  recordMiss(cacheNs: number): void {
    add(this.misses, cacheNs);
  }

  /** `model`'s statistics with the cache's counts added in. */
  overlay(model: ModelStatistics): ModelStatistics {
    const s = model.inference_stats;
    const sum = (a: StatisticDuration, b: StatisticDuration): StatisticDuration => ({ count: a.count + b.count, ns: a.ns + b.ns });
    return {
      ...model,
      last_inference: Math.max(model.last_inference, this.lastHitMs),
      inference_stats: {
        ...s,
        success: sum(s.success, this.hitRequests),
        queue: sum(s.queue, this.hitQueue),
        cache_hit: sum(s.cache_hit, this.hits),
        cache_miss: sum(s.cache_miss, this.misses),
      },
    };
  }
}
