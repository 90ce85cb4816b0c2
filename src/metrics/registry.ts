// The server's metrics, assembled: one registry holding Triton's per-model families (read from
// the served models at scrape time), the LLM families the observer records into, worker liveness
// and the process metrics. The composition root creates one and hands the observer to backends.

import { Registry, collectDefaultMetrics } from 'prom-client';
import { EVENT_LOOP_MONITORING_PRECISION_MS, LLM_PREFIX, type MetricsEngineType, VLLM_PREFIX } from './metric-definitions.js';
import { PromLlmMetrics, type LlmMetricsObserver } from './llm-observer.js';
import { PromLifecycleMetrics, type LifecycleObserver } from './lifecycle-metrics.js';
import { registerTritonMetrics, type ModelSnapshotSource } from './triton-collector.js';
import { registerResponseCacheMetrics } from './response-cache-collector.js';
import type { ResponseCacheSummary } from '../contracts/response-cache.js';
import type { MetricFamily } from '../contracts/ui-status.js';
import { readFamilies } from './families.js';
import { AS_REGISTERED, type FamilyNaming, writeExpositions } from './text-format.js';

/** What the metrics server needs of a registry. */
export interface MetricsRegistry {
  /** Prometheus text exposition of every family. */
  metrics(): Promise<string>;
  readonly contentType: string;
}

export interface MetricsOptions {
  /** The served model versions at this instant (ModelManager.servedModels). */
  readonly models: () => readonly ModelSnapshotSource[];
  /** Whose names the LLM series speak besides conveyor: (`vllm`: every series again under vllm:, with vLLM's routing extras). */
  readonly engineType: MetricsEngineType;
  /** The response cache's counts now (--cache-config); absent or undefined, the nv_cache_* server series have no samples. */
  readonly responseCache?: () => ResponseCacheSummary | undefined;
  /** prom-client's process_* and nodejs_* metrics (default true; tests may turn them off). */
  readonly processMetrics?: boolean;
  /** The clock the process series' refresh interval is measured on, ms (performance.now; tests inject one). */
  readonly clock?: () => number;
}

export interface ConveyorMetrics {
  readonly registry: MetricsRegistry;
  /** For the LLM backend: call it per engine step message and per finished request. */
  readonly llm: LlmMetricsObserver;
  /** For the model residency: loads, unloads, evictions and load time per model. */
  readonly lifecycle: LifecycleObserver;
  /** Every family as plain JSON, read now (the dashboard's status route). */
  readonly families: () => Promise<MetricFamily[]>;
}

/**
 * How often the process_* and nodejs_* series are read at most. The endpoint picker scrapes every
 * 50 ms for the serving series, which are read at every scrape; the process series are for
 * Prometheus' 15–30 s scrapes, and reading them costs more than everything else in a scrape
 * together (the event-loop delay histogram's mean and deviation walk every bucket,
 * process.memoryUsage(), /proc reads for memory and file descriptors: about 3 ms on a loaded
 * 2-core machine), so a scrape within this long of the last reading reports the same values.
 */
export const PROCESS_METRICS_REFRESH_MS = 1000;

/**
 * Readings older than this are taken in the scrape itself; younger but past the refresh interval,
 * they are reported as they are and taken again right after the scrape (its own event-loop turn),
 * so no scrape of a frequent scraper waits for them, and one every 15–30 s (Prometheus) always
 * finds fresh ones.
 */
export const PROCESS_METRICS_STALE_MS = 5000;

type Collect = (this: unknown) => unknown;

/**
 * Takes over the collect() of `metrics` (prom-client's default metrics): the registry's calls
 * report the last reading, and the readings are taken for all of them together as above.
 */
function readProcessMetricsTogether(metrics: readonly object[], clock: () => number): void {
  const collects: [object, Collect][] = [];
  let lastRead = Number.NEGATIVE_INFINITY;
  let refreshQueued = false;
  const readAll = (): void => {
    refreshQueued = false;
    lastRead = clock();
    for (const [metric, collect] of collects) collect.call(metric);
  };
  const onScrape = (): void => {
    const age = clock() - lastRead;
    if (age >= PROCESS_METRICS_STALE_MS) readAll();
    else if (age >= PROCESS_METRICS_REFRESH_MS && !refreshQueued) {
      refreshQueued = true;
      setImmediate(readAll);
    }
  };
  for (const metric of metrics) {
    const holder = metric as { collect?: Collect };
    const collect = holder.collect;
    if (typeof collect !== 'function') continue;
    collects.push([metric, collect]);
    // Called once per metric per scrape: the first call of a scrape decides, the rest find the reading fresh or queued.
    holder.collect = onScrape;
  }
}

/**
 * A conveyor: LLM family's name in its vllm: copy. The copy is written from the same reading of
 * the conveyor: families as their own text (writeExpositions), rather than recorded as a second
 * set of prom-client metrics: the LLM families are about two thirds of a scrape's lines, and each
 * step's recording would double too.
 */
export const asVllmName: FamilyNaming = (name) => (name.startsWith(LLM_PREFIX) ? `${VLLM_PREFIX}${name.slice(LLM_PREFIX.length)}` : name);

export function createMetrics(options: MetricsOptions): ConveyorMetrics {
  // Registries per server, never prom-client's global one: tests run several servers per process.
  const registry = new Registry();
  // The conveyor: LLM families on a registry of their own, so their text can be copied under vllm:.
  const llmRegistry = new Registry();
  const vllmNames = options.engineType === 'vllm';
  registerTritonMetrics(registry, options.models);
  registerResponseCacheMetrics(registry, options.responseCache ?? (() => undefined));
  const llm = new PromLlmMetrics(llmRegistry, [LLM_PREFIX], vllmNames ? registry : undefined);
  if (options.processMetrics ?? true) {
    const before = new Set(registry.getMetricsAsArray());
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_MONITORING_PRECISION_MS });
    const clock = options.clock ?? (() => performance.now());
    readProcessMetricsTogether(
      registry.getMetricsAsArray().filter((metric) => !before.has(metric)),
      clock,
    );
  }
  const sources = [
    { registry, namings: [AS_REGISTERED] },
    { registry: llmRegistry, namings: vllmNames ? [AS_REGISTERED, asVllmName] : [AS_REGISTERED] },
  ];
  const exposition: MetricsRegistry = { contentType: registry.contentType, metrics: () => writeExpositions(sources) };
  const families = async (): Promise<MetricFamily[]> => {
    const [rest, conveyor] = await Promise.all([readFamilies(registry), readFamilies(llmRegistry)]);
    return [...rest, ...conveyor, ...(vllmNames ? conveyor.map(asVllmFamily) : [])];
  };
  return { registry: exposition, llm, lifecycle: new PromLifecycleMetrics(registry), families };
}

/** A conveyor: family as its vllm: copy in the families JSON. */
function asVllmFamily(family: MetricFamily): MetricFamily {
  return { ...family, name: asVllmName(family.name), samples: family.samples.map((sample) => ({ ...sample, name: asVllmName(sample.name) })) };
}
