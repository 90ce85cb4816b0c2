// The metrics module's surface: the only place outside src/metrics/ that needs anything of it.

export { createMetrics, type ConveyorMetrics, type MetricsOptions, type MetricsRegistry } from './registry.js';
export { startMetricsServer, type HealthProbes, type MetricsServer, type MetricsServerOptions } from './metrics-server.js';
export { finishedRequest, NO_LLM_METRICS, type FinishedRequest, type KvCacheShape, type LlmEngineMetrics, type LlmMetricsObserver } from './llm-observer.js';
export { METRICS_ENGINE_TYPES, type MetricsEngineType } from './metric-definitions.js';
export type { ModelSnapshotSource } from './triton-collector.js';
export { NO_LIFECYCLE_METRICS, type LifecycleObserver, type UnloadReason } from './lifecycle-metrics.js';
