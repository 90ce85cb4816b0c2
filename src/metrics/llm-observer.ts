// LLM metrics with vLLM's meanings. The LLM serving layer calls the observer with what it already
// receives: every engine step message (observeStep) and every finished request
// (observeRequestFinished). The observer only records; it never answers anything back.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { FinishReason, SequenceUpdate, StepOutput } from '../contracts/generate.js';
import { FINISHED_REASONS, LLM_COUNTERS, LLM_GAUGES, LLM_HISTOGRAMS } from './metric-definitions.js';

/** A request that ended with a finish reason. Every time is in ms on one clock (the engine's). */
export interface FinishedRequest {
  readonly model: string;
  readonly reason: FinishReason;
  /** Arrival at the front end (GenerateRequest.arrivalTimeMs). */
  readonly arrivalMs: number;
  /** First scheduled (SequenceUpdate.scheduledTimeMs); null if it never ran. */
  readonly scheduledMs: number | null;
  /** First output token applied (SequenceUpdate.firstTokenTimeMs); null if none was. */
  readonly firstTokenMs: number | null;
  /** The step that finished it (StepOutput.timeMs of its final update). */
  readonly finishedMs: number;
  readonly promptTokens: number;
  readonly outputTokens: number;
}

export interface LlmMetricsObserver {
  /** Every step message of `model`'s engine, in order (flush messages with stepId -1 included). */
  observeStep(model: string, step: StepOutput): void;
  /** Once per request that got a final update (stop, length or abort); not for rejected requests. */
  observeRequestFinished(request: FinishedRequest): void;
  /** The model's engine stopped (unload or crash): drop its gauges and per-request state. */
  forgetModel(model: string): void;
}

/** The FinishedRequest of a request's final update, as EngineClient delivers it. */
export function finishedRequest(model: string, arrivalMs: number, final: SequenceUpdate, stepTimeMs: number): FinishedRequest {
  return {
    model, arrivalMs, finishedMs: stepTimeMs,
    reason: final.finishReason ?? 'abort',
    scheduledMs: final.scheduledTimeMs,
    firstTokenMs: final.firstTokenTimeMs,
    promptTokens: final.numPromptTokens,
    outputTokens: final.numOutputTokens,
  };
}

/** Observers for tests and for servers without metrics. */
export const NO_LLM_METRICS: LlmMetricsObserver = { observeStep: () => undefined, observeRequestFinished: () => undefined, forgetModel: () => undefined };

type HistogramKey = keyof typeof LLM_HISTOGRAMS;
type CounterKey = keyof typeof LLM_COUNTERS;
type GaugeKey = keyof typeof LLM_GAUGES;

/** One prefix's worth of prom-client metrics (conveyor:, and vllm: when mirrored). */
class LlmMetricSet {
  readonly histograms: Record<HistogramKey, Histogram>;
  readonly counters: Record<CounterKey, Counter>;
  readonly gauges: Record<GaugeKey, Gauge>;

  constructor(registry: Registry, prefix: string) {
    const common = <D extends { name: string; help: string; labels: readonly string[] }>(d: D) => ({ name: `${prefix}${d.name}`, help: d.help, labelNames: d.labels, registers: [registry] });
    this.histograms = mapValues(LLM_HISTOGRAMS, (d) => new Histogram({ ...common(d), buckets: [...d.buckets] }));
    this.counters = mapValues(LLM_COUNTERS, (d) => new Counter(common(d)));
    this.gauges = mapValues(LLM_GAUGES, (d) => new Gauge(common(d)));
  }
}

function mapValues<K extends string, V, R>(record: Readonly<Record<K, V>>, f: (v: V) => R): Record<K, R> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, f(v as V)])) as Record<K, R>;
}

/** Counters the engine reports as running totals; Prometheus counters need the increments. */
interface EngineTotals {
  prefixCacheQueries: number;
  prefixCacheHits: number;
  numPreemptions: number;
}

/** What one step adds, summed over its updates. */
interface StepTally {
  promptTokens: number;
  cachedTokens: number;
  generationTokens: number;
  interTokenSeconds: number[];
}

const seconds = (ms: number): number => Math.max(0, ms) / 1000;

export class PromLlmMetrics implements LlmMetricsObserver {
  private readonly sets: LlmMetricSet[];
  private readonly totals = new Map<string, EngineTotals>();
  /** Per model, per live request: when its latest token was applied (for inter-token latency). */
  private readonly lastTokenMs = new Map<string, Map<string, number>>();

  constructor(registry: Registry, prefixes: readonly string[]) {
    this.sets = prefixes.map((p) => new LlmMetricSet(registry, p));
  }

  observeStep(model: string, step: StepOutput): void {
    const labels = { model_name: model };
    const { stats } = step;
    if (!this.totals.has(model)) this.declareModel(model);
    const delta = this.totalsDelta(model, stats);
    const tally = this.tally(model, step);
    for (const set of this.sets) {
      set.gauges.numRunning.set(labels, stats.numRunning);
      set.gauges.numWaiting.set(labels, stats.numWaiting);
      set.gauges.kvCacheUsage.set(labels, stats.kvCacheUsage);
      set.counters.prefixCacheQueries.inc(labels, delta.prefixCacheQueries);
      set.counters.prefixCacheHits.inc(labels, delta.prefixCacheHits);
      set.counters.preemptions.inc(labels, delta.numPreemptions);
      set.counters.promptTokens.inc(labels, tally.promptTokens);
      set.counters.promptTokensCached.inc(labels, tally.cachedTokens);
      set.counters.generationTokens.inc(labels, tally.generationTokens);
      for (const gap of tally.interTokenSeconds) set.histograms.interTokenLatency.observe(labels, gap);
      // A flush message (stepId -1) reports aborts and rejections, not a step that ran.
      if (step.stepId >= 0) set.histograms.iterationTokens.observe(labels, tally.promptTokens + tally.generationTokens);
    }
  }

  observeRequestFinished(r: FinishedRequest): void {
    const labels = { model_name: r.model };
    for (const { histograms: h, counters } of this.sets) {
      h.e2eLatency.observe(labels, seconds(r.finishedMs - r.arrivalMs));
      h.requestPromptTokens.observe(labels, r.promptTokens);
      h.requestGenerationTokens.observe(labels, r.outputTokens);
      if (r.scheduledMs !== null) {
        h.queueTime.observe(labels, seconds(r.scheduledMs - r.arrivalMs));
        h.inferenceTime.observe(labels, seconds(r.finishedMs - r.scheduledMs));
      }
      if (r.firstTokenMs !== null) {
        h.timeToFirstToken.observe(labels, seconds(r.firstTokenMs - r.arrivalMs));
        h.decodeTime.observe(labels, seconds(r.finishedMs - r.firstTokenMs));
        if (r.scheduledMs !== null) h.prefillTime.observe(labels, seconds(r.firstTokenMs - r.scheduledMs));
        if (r.outputTokens > 1) h.timePerOutputToken.observe(labels, seconds(r.finishedMs - r.firstTokenMs) / (r.outputTokens - 1));
      }
      counters.requestSuccess.inc({ ...labels, finished_reason: r.reason });
    }
  }

  forgetModel(model: string): void {
    this.totals.delete(model);
    this.lastTokenMs.delete(model);
    for (const set of this.sets) for (const gauge of Object.values(set.gauges)) gauge.remove({ model_name: model });
  }

  /** Zero-valued request_success series for every reason, so rates exist before the first finish. */
  private declareModel(model: string): void {
    for (const set of this.sets) for (const reason of FINISHED_REASONS) set.counters.requestSuccess.inc({ model_name: model, finished_reason: reason }, 0);
  }

  private totalsDelta(model: string, now: EngineTotals): EngineTotals {
    const before = this.totals.get(model) ?? { prefixCacheQueries: 0, prefixCacheHits: 0, numPreemptions: 0 };
    this.totals.set(model, { prefixCacheQueries: now.prefixCacheQueries, prefixCacheHits: now.prefixCacheHits, numPreemptions: now.numPreemptions });
    // A total below the last one means a new engine counting from zero: all of it is new.
    const diff = (a: number, b: number): number => (a >= b ? a - b : a);
    return {
      prefixCacheQueries: diff(now.prefixCacheQueries, before.prefixCacheQueries),
      prefixCacheHits: diff(now.prefixCacheHits, before.prefixCacheHits),
      numPreemptions: diff(now.numPreemptions, before.numPreemptions),
    };
  }

  /**
   * vLLM's per-step counts: a request's whole prompt counts in the step that produced its first
   * token (not per prefill chunk), each new token counts as generated, and each token-bearing
   * step after a request's first adds one inter-token gap.
   */
  private tally(model: string, step: StepOutput): StepTally {
    let live = this.lastTokenMs.get(model);
    if (live === undefined) this.lastTokenMs.set(model, (live = new Map()));
    const tally: StepTally = { promptTokens: 0, cachedTokens: 0, generationTokens: 0, interTokenSeconds: [] };
    for (const u of step.updates) {
      const n = u.newTokenIds.length;
      if (n > 0) {
        tally.generationTokens += n;
        // First tokens ever: a request resumed after preemption has older output tokens.
        if (u.numOutputTokens === n) {
          tally.promptTokens += u.numPromptTokens;
          tally.cachedTokens += u.numCachedTokens;
        }
        const last = live.get(u.requestId);
        if (last !== undefined) tally.interTokenSeconds.push(seconds(step.timeMs - last));
        live.set(u.requestId, step.timeMs);
      }
      if (u.finishReason !== null) live.delete(u.requestId);
    }
    for (const r of step.rejections) live.delete(r.requestId);
    return tally;
  }
}
