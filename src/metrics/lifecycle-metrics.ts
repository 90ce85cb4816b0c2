// The model lifecycle families (LIFECYCLE_METRICS): what the residency reports as it loads on
// demand, unloads idle models, evicts for room and puts models to sleep.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LIFECYCLE_METRICS, type UNLOAD_REASONS } from './metric-definitions.js';

export type UnloadReason = (typeof UNLOAD_REASONS)[number];

/** What the model residency (src/serving/model-residency.ts) calls; NO_LIFECYCLE_METRICS when nothing records. */
export interface LifecycleObserver {
  loaded(model: string, seconds: number): void;
  loadFailed(model: string): void;
  unloaded(model: string, reason: UnloadReason): void;
}

export const NO_LIFECYCLE_METRICS: LifecycleObserver = { loaded: () => undefined, loadFailed: () => undefined, unloaded: () => undefined };

export class PromLifecycleMetrics implements LifecycleObserver {
  private readonly loads: Counter;
  private readonly unloads: Counter;
  private readonly evictions: Counter;
  private readonly loadDuration: Histogram;
  private readonly loadedNow: Gauge;

  constructor(registry: Registry) {
    const { loads, unloads, evictions, loadDuration, loaded } = LIFECYCLE_METRICS;
    const common = (d: { name: string; help: string; labels: readonly string[] }) => ({ name: d.name, help: d.help, labelNames: d.labels, registers: [registry] });
    this.loads = new Counter(common(loads));
    this.unloads = new Counter(common(unloads));
    this.evictions = new Counter(common(evictions));
    this.loadDuration = new Histogram({ ...common(loadDuration), buckets: [...loadDuration.buckets] });
    this.loadedNow = new Gauge(common(loaded));
  }

  loaded(model: string, seconds: number): void {
    this.loads.inc({ model, result: 'success' });
    this.loadDuration.observe({ model }, seconds);
    this.loadedNow.set({ model }, 1);
  }

  loadFailed(model: string): void {
    this.loads.inc({ model, result: 'failure' });
  }

  unloaded(model: string, reason: UnloadReason): void {
    this.unloads.inc({ model, reason });
    if (reason === 'evicted') this.evictions.inc({ model });
    this.loadedNow.set({ model }, 0);
  }
}
