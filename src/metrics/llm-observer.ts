// LLM metrics with vLLM's meanings. The LLM serving layer calls the observer with what it already
// receives: every engine step message (observeStep) and every finished request
// (observeRequestFinished). The observer only records; it never answers anything back.
//
// Each engine attaches on its own: during a reload (a precision swap) the old and the new engine
// of one model run side by side, each with its own running totals, and the old one's detach must
// not take the new one's gauges with it.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { EngineStats, FinishReason, RequestSpecDecode, SequenceUpdate, StepOutput } from '../contracts/generate.js';
import { FINISHED_REASONS, LLM_COUNTERS, LLM_GAUGES, LLM_HISTOGRAMS, VLLM_PREFIX, VLLM_ROUTING_METRICS } from './metric-definitions.js';

/** A request that ended with a finish reason. Every time is in ms on one clock (the engine's). */
export interface FinishedRequest {
  readonly model: string;
  readonly reason: FinishReason;
  /** Arrival at the engine (SequenceUpdate.arrivalTimeMs). */
  readonly arrivalMs: number;
  /** First scheduled (SequenceUpdate.scheduledTimeMs); null if it never ran. */
  readonly scheduledMs: number | null;
  /** First output token applied (SequenceUpdate.firstTokenTimeMs); null if none was. */
  readonly firstTokenMs: number | null;
  /** The step that finished it (StepOutput.timeMs of its final update). */
  readonly finishedMs: number;
  readonly promptTokens: number;
  readonly outputTokens: number;
  /** Speculative decoding's proposals for it (checked, proposed, accepted); absent when it proposed none. */
  readonly specDecode?: RequestSpecDecode;
}

/** An engine's KV pool as it reports it when ready (vllm:cache_config_info). */
export interface KvCacheShape {
  readonly blockSize: number;
  readonly numBlocks: number;
}

export interface LlmMetricsObserver {
  /** An engine starts serving `model`; its step messages go to the handle. `cache`: its pool, when known. */
  attach(model: string, cache?: KvCacheShape): LlmEngineMetrics;
  /** Once per request that got a final update (stop, length or abort); not for rejected requests. */
  observeRequestFinished(request: FinishedRequest): void;
}

/** One engine's view of the observer. */
export interface LlmEngineMetrics {
  /** Every step message of the engine, in order (flush messages with stepId -1 included). */
  observeStep(step: StepOutput): void;
  /** The engine stopped (unload): its share of the gauges goes; the model's go with its last engine. */
  detach(): void;
}

/** The FinishedRequest of a request's final update, as EngineClient delivers it. */
export function finishedRequest(model: string, final: SequenceUpdate, stepTimeMs: number): FinishedRequest {
  return {
    model,
    arrivalMs: final.arrivalTimeMs,
    finishedMs: stepTimeMs,
    reason: final.finishReason ?? 'abort',
    scheduledMs: final.scheduledTimeMs,
    firstTokenMs: final.firstTokenTimeMs,
    promptTokens: final.numPromptTokens,
    outputTokens: final.numOutputTokens,
    ...(final.specDecode ? { specDecode: final.specDecode } : {}),
  };
}

/** Observers for tests and for servers without metrics. */
export const NO_LLM_METRICS: LlmMetricsObserver = {
  attach: () => ({ observeStep: () => undefined, detach: () => undefined }),
  observeRequestFinished: () => undefined,
};

type HistogramKey = keyof typeof LLM_HISTOGRAMS;
type CounterKey = keyof typeof LLM_COUNTERS;
type GaugeKey = keyof typeof LLM_GAUGES;

/** The vllm: set's extras (VLLM_ROUTING_METRICS). */
interface RoutingMetrics {
  readonly loraRequestsInfo: Gauge;
  readonly cacheConfigInfo: Gauge;
  readonly gpuCacheUsage: Gauge;
  readonly gpuPrefixCacheHitRate: Gauge;
  readonly gpuPrefixCacheHits: Counter;
  readonly gpuPrefixCacheQueries: Counter;
}

/** One prefix's worth of prom-client metrics (conveyor:; vllm: too where a registry records both). */
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

/** vLLM's routing extras (VLLM_ROUTING_METRICS), always under vllm:. */
function routingMetrics(registry: Registry): RoutingMetrics {
  const common = <D extends { name: string; help: string; labels: readonly string[] }>(d: D) => ({ name: `${VLLM_PREFIX}${d.name}`, help: d.help, labelNames: d.labels, registers: [registry] });
  const r = VLLM_ROUTING_METRICS;
  return {
    loraRequestsInfo: new Gauge(common(r.loraRequestsInfo)),
    cacheConfigInfo: new Gauge(common(r.cacheConfigInfo)),
    gpuCacheUsage: new Gauge(common(r.gpuCacheUsage)),
    gpuPrefixCacheHitRate: new Gauge(common(r.gpuPrefixCacheHitRate)),
    gpuPrefixCacheHits: new Counter(common(r.gpuPrefixCacheHits)),
    gpuPrefixCacheQueries: new Counter(common(r.gpuPrefixCacheQueries)),
  };
}

/** Conveyor serves no LoRA adapters: a batch holds none, none run or wait. */
const NO_LORA = { max_lora: '0', running_lora_adapters: '', waiting_lora_adapters: '' } as const;

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

/** What the observer keeps per attached engine. */
interface AttachedEngine {
  readonly model: string;
  totals: EngineTotals;
  /** Its latest stats; null before its first step message. */
  latest: EngineStats | null;
  /** Per live request: when its latest token was applied (for inter-token latency). */
  readonly lastTokenMs: Map<string, number>;
  /** Its KV pool, from attach and then from each step's stats; null while unknown. */
  cache: KvCacheShape | null;
}

/** A model's prefix-cache tokens since it loaded, over all its engines (vllm:gpu_prefix_cache_hit_rate). */
interface PrefixTally {
  queries: number;
  hits: number;
}

export class PromLlmMetrics implements LlmMetricsObserver {
  private readonly sets: LlmMetricSet[];
  /** vLLM's routing extras: with a vllm: set, or on their own registry (`routingRegistry`). */
  private readonly routing: RoutingMetrics[];
  /** Per model, its attached engines in attach order (the last one gets new work). */
  private readonly engines = new Map<string, AttachedEngine[]>();
  private readonly declared = new Set<string>();
  private readonly prefixTallies = new Map<string, PrefixTally>();
  /** The cache_config_info labels each model's series carries now (replaced when the pool changes). */
  private readonly cacheLabels = new Map<string, Record<string, string>>();

  /**
   * Records the LLM families under each of `prefixes` on `registry`, with vLLM's routing extras
   * beside a vllm: set, or on `routingRegistry` when the vllm: copies are rendered from the
   * conveyor: text instead of recorded twice (registry.ts).
   */
  constructor(registry: Registry, prefixes: readonly string[], routingRegistry?: Registry) {
    this.sets = prefixes.map((p) => new LlmMetricSet(registry, p));
    this.routing = [...(prefixes.includes(VLLM_PREFIX) ? [routingMetrics(registry)] : []), ...(routingRegistry ? [routingMetrics(routingRegistry)] : [])];
  }

  attach(model: string, cache?: KvCacheShape): LlmEngineMetrics {
    const engine: AttachedEngine = { model, totals: { prefixCacheQueries: 0, prefixCacheHits: 0, numPreemptions: 0 }, latest: null, lastTokenMs: new Map(), cache: cache ?? null };
    this.engines.set(model, [...(this.engines.get(model) ?? []), engine]);
    if (!this.declared.has(model)) this.declareModel(model);
    this.publishGauges(model);
    this.publishRouting(model);
    return { observeStep: (step) => this.observeStep(engine, step), detach: () => this.detach(engine) };
  }

  /** The vllm: extras: the newest engine's pool, the model's hit rate so far, and a fresh LoRA timestamp. */
  private publishRouting(model: string): void {
    const routing = this.routing;
    if (routing.length === 0) return;
    const cache = (this.engines.get(model) ?? []).filter((e) => e.cache !== null).at(-1)?.cache;
    const tally = this.prefixTallies.get(model) ?? { queries: 0, hits: 0 };
    const before = this.cacheLabels.get(model);
    const labels = cache ? { model_name: model, block_size: String(cache.blockSize), num_gpu_blocks: String(cache.numBlocks) } : undefined;
    const nowSeconds = Date.now() / 1000;
    for (const r of routing) {
      r.loraRequestsInfo.set(NO_LORA, nowSeconds);
      r.gpuPrefixCacheHitRate.set({ model_name: model }, tally.queries > 0 ? tally.hits / tally.queries : 0);
      if (before && labels && before.num_gpu_blocks === labels.num_gpu_blocks && before.block_size === labels.block_size) continue;
      if (before) r.cacheConfigInfo.remove(before);
      if (labels) r.cacheConfigInfo.set(labels, 1);
    }
    if (labels) this.cacheLabels.set(model, labels);
  }

  private detach(engine: AttachedEngine): void {
    const remaining = (this.engines.get(engine.model) ?? []).filter((e) => e !== engine);
    if (remaining.length > 0) {
      this.engines.set(engine.model, remaining);
      this.publishGauges(engine.model);
      return;
    }
    this.engines.delete(engine.model);
    this.declared.delete(engine.model);
    this.prefixTallies.delete(engine.model);
    const cacheLabels = this.cacheLabels.get(engine.model);
    this.cacheLabels.delete(engine.model);
    for (const set of this.sets) for (const gauge of Object.values(set.gauges)) gauge.remove({ model_name: engine.model });
    for (const routing of this.routing) {
      routing.gpuCacheUsage.remove({ model_name: engine.model });
      routing.gpuPrefixCacheHitRate.remove({ model_name: engine.model });
      if (cacheLabels) routing.cacheConfigInfo.remove(cacheLabels);
      if (this.engines.size === 0) routing.loraRequestsInfo.reset();
    }
  }

  /**
   * Requests running and waiting summed over the model's engines; KV usage of the newest one that
   * has stepped. Before any engine stepped all three are 0 (an idle engine sends no steps), so a
   * router reading a fresh pod finds the series rather than a gap.
   */
  private publishGauges(model: string): void {
    const engines = this.engines.get(model) ?? [];
    const reporting = engines.filter((e) => e.latest !== null).map((e) => e.latest!);
    const labels = { model_name: model };
    const kvUsage = reporting.at(-1)?.kvCacheUsage ?? 0;
    for (const set of this.sets) {
      set.gauges.numRunning.set(
        labels,
        reporting.reduce((n, s) => n + s.numRunning, 0),
      );
      set.gauges.numWaiting.set(
        labels,
        reporting.reduce((n, s) => n + s.numWaiting, 0),
      );
      set.gauges.kvCacheUsage.set(labels, kvUsage);
    }
    for (const routing of this.routing) routing.gpuCacheUsage.set(labels, kvUsage);
  }

  private observeStep(engine: AttachedEngine, step: StepOutput): void {
    const labels = { model_name: engine.model };
    const { stats } = step;
    const delta = this.totalsDelta(engine, stats);
    const tally = this.tally(engine, step);
    engine.latest = stats;
    if (engine.cache !== null && engine.cache.numBlocks !== stats.numTotalBlocks) engine.cache = { ...engine.cache, numBlocks: stats.numTotalBlocks };
    const prefix = this.prefixTallies.get(engine.model) ?? { queries: 0, hits: 0 };
    this.prefixTallies.set(engine.model, { queries: prefix.queries + delta.prefixCacheQueries, hits: prefix.hits + delta.prefixCacheHits });
    this.publishGauges(engine.model);
    this.publishRouting(engine.model);
    for (const set of this.sets) {
      set.counters.prefixCacheQueries.inc(labels, delta.prefixCacheQueries);
      set.counters.prefixCacheHits.inc(labels, delta.prefixCacheHits);
      set.counters.preemptions.inc(labels, delta.numPreemptions);
      set.counters.promptTokens.inc(labels, tally.promptTokens);
      set.counters.promptTokensCached.inc(labels, tally.cachedTokens);
      set.counters.generationTokens.inc(labels, tally.generationTokens);
      for (const gap of tally.interTokenSeconds) set.histograms.interTokenLatency.observe(labels, gap);
      // A flush message (stepId -1) reports aborts and rejections, not a step that ran.
      if (step.stepId >= 0) set.histograms.iterationTokens.observe(labels, tally.promptTokens + tally.generationTokens);
      const spec = step.specDecode;
      if (spec) {
        set.counters.specDecodeNumDrafts.inc(labels, spec.numDrafts);
        set.counters.specDecodeNumDraftTokens.inc(labels, spec.numDraftTokens);
        set.counters.specDecodeNumAcceptedTokens.inc(labels, spec.numAcceptedTokens);
        spec.acceptedPerPosition.forEach((accepted, position) => set.counters.specDecodeNumAcceptedTokensPerPos.inc({ ...labels, position: String(position) }, accepted));
      }
    }
    for (const routing of this.routing) {
      routing.gpuPrefixCacheQueries.inc(labels, delta.prefixCacheQueries);
      routing.gpuPrefixCacheHits.inc(labels, delta.prefixCacheHits);
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

  /** Zero-valued counter series (request_success for every reason), so rates exist before the first step. */
  private declareModel(model: string): void {
    this.declared.add(model);
    for (const set of this.sets) {
      // Series with a label beyond the model's (finish reason, draft position) appear when they first count.
      for (const [key, counter] of Object.entries(set.counters)) if (key !== 'requestSuccess' && key !== 'specDecodeNumAcceptedTokensPerPos') counter.inc({ model_name: model }, 0);
      for (const reason of FINISHED_REASONS) set.counters.requestSuccess.inc({ model_name: model, finished_reason: reason }, 0);
    }
    for (const routing of this.routing) {
      routing.gpuPrefixCacheQueries.inc({ model_name: model }, 0);
      routing.gpuPrefixCacheHits.inc({ model_name: model }, 0);
    }
  }

  private totalsDelta(engine: AttachedEngine, now: EngineTotals): EngineTotals {
    const before = engine.totals;
    engine.totals = { prefixCacheQueries: now.prefixCacheQueries, prefixCacheHits: now.prefixCacheHits, numPreemptions: now.numPreemptions };
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
  private tally(engine: AttachedEngine, step: StepOutput): StepTally {
    const live = engine.lastTokenMs;
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
