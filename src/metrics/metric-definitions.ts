// Every metric Conveyor exports: name, help, labels and buckets, in this one file (ARCHITECTURE.md
// principle 8). Triton's names are kept exactly so Triton dashboards and perf_analyzer's server
// stats work unchanged (reference/triton-protocol.md §5). LLM metrics carry vLLM's meanings and
// bucket boundaries (reference/llm-serving.md §1g) under the `conveyor:` prefix, and optionally
// the same series again under `vllm:` with vLLM's routing extras (METRICS_ENGINE_TYPES). Process metrics (process_*, nodejs_*, including
// nodejs_eventloop_lag_seconds) are prom-client's default set, named by prom-client.

export type MetricKind = 'counter' | 'gauge' | 'histogram';

export interface MetricDefinition {
  readonly name: string;
  readonly help: string;
  readonly kind: MetricKind;
  readonly labels: readonly string[];
  /** Histograms only: upper bounds, ascending (+Inf is implicit). */
  readonly buckets?: readonly number[];
}

// ---------------------------------------------------------------------------------------------
// Triton (per model version; computed at scrape time from the statistics snapshot)

/**
 * Triton's per-model labels; `version` is a string as in Triton. `precision` (not Triton's) is the
 * variant the version runs (fp32, int8, ...), so a dashboard tells a precision swap apart.
 */
export const TRITON_LABELS = ['model', 'version', 'precision'] as const;

/** The `reason` values of nv_inference_request_failure (Triton's core constants). */
export const FAILURE_REASONS = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'] as const;

/** Batch sizes are powers of two in practice (preferred_batch_size, max_batch_size). */
const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

export const TRITON_METRICS = {
  requestSuccess: { name: 'nv_inference_request_success', kind: 'counter', labels: TRITON_LABELS, help: 'Requests answered successfully (a batched request counts once)' },
  requestFailure: { name: 'nv_inference_request_failure', kind: 'counter', labels: [...TRITON_LABELS, 'reason'], help: 'Requests that failed, by reason' },
  inferenceCount: { name: 'nv_inference_count', kind: 'counter', labels: TRITON_LABELS, help: 'Inferences run: a request of batch n adds n' },
  execCount: { name: 'nv_inference_exec_count', kind: 'counter', labels: TRITON_LABELS, help: 'Model executions (batches) run' },
  pendingRequests: { name: 'nv_inference_pending_request_count', kind: 'gauge', labels: TRITON_LABELS, help: 'Requests queued and not yet executing' },
  requestDuration: { name: 'nv_inference_request_duration_us', kind: 'counter', labels: TRITON_LABELS, help: 'Total time of successful requests from arrival to response, microseconds' },
  queueDuration: { name: 'nv_inference_queue_duration_us', kind: 'counter', labels: TRITON_LABELS, help: 'Total time successful requests waited in the queue, microseconds' },
  computeInputDuration: { name: 'nv_inference_compute_input_duration_us', kind: 'counter', labels: TRITON_LABELS, help: 'Total input preparation time of successful requests, microseconds' },
  computeInferDuration: { name: 'nv_inference_compute_infer_duration_us', kind: 'counter', labels: TRITON_LABELS, help: 'Total model run time of successful requests, microseconds' },
  computeOutputDuration: { name: 'nv_inference_compute_output_duration_us', kind: 'counter', labels: TRITON_LABELS, help: 'Total output extraction time of successful requests, microseconds' },
  // Response cache, per model: exported only for versions whose answers go through the cache, as Triton does.
  cacheHits: { name: 'nv_cache_num_hits_per_model', kind: 'counter', labels: TRITON_LABELS, help: 'Number of response cache hits per model' },
  cacheMisses: { name: 'nv_cache_num_misses_per_model', kind: 'counter', labels: TRITON_LABELS, help: 'Number of response cache misses per model' },
  cacheHitDuration: {
    name: 'nv_cache_hit_duration_per_model',
    kind: 'counter',
    labels: TRITON_LABELS,
    help: 'Total time requests spent looking up and copying out cached responses on hits, microseconds',
  },
  cacheMissDuration: {
    name: 'nv_cache_miss_duration_per_model',
    kind: 'counter',
    labels: TRITON_LABELS,
    help: 'Total time requests spent looking up and inserting responses into the cache on misses, microseconds',
  },
  // Not a Triton metric (Triton has none): the dynamic batcher's batch sizes, one observation per execution.
  batchSize: { name: 'conveyor_inference_batch_size', kind: 'histogram', labels: TRITON_LABELS, buckets: BATCH_SIZE_BUCKETS, help: 'Items per model execution formed by the dynamic batcher' },
} as const satisfies Record<string, MetricDefinition>;

/**
 * The server-wide series of Triton's `local` response cache (its cache library registers them
 * through Triton's custom metrics API, every one a gauge, without labels); exported only while the
 * server has a cache (--cache-config).
 */
export const RESPONSE_CACHE_METRICS = {
  utilization: { name: 'nv_cache_util', kind: 'gauge', labels: [], help: 'Cache utilization [0.0 - 1.0]' },
  entries: { name: 'nv_cache_num_entries', kind: 'gauge', labels: [], help: 'Number of responses stored in response cache' },
  lookups: { name: 'nv_cache_num_lookups', kind: 'gauge', labels: [], help: 'Number of cache lookups in response cache' },
  hits: { name: 'nv_cache_num_hits', kind: 'gauge', labels: [], help: 'Number of cache hits in response cache' },
  misses: { name: 'nv_cache_num_misses', kind: 'gauge', labels: [], help: 'Number of cache misses in response cache' },
  evictions: { name: 'nv_cache_num_evictions', kind: 'gauge', labels: [], help: 'Number of cache evictions in response cache' },
  lookupDuration: { name: 'nv_cache_lookup_duration', kind: 'gauge', labels: [], help: 'Total cache lookup duration (hit and miss), in microseconds' },
  insertionDuration: { name: 'nv_cache_insertion_duration', kind: 'gauge', labels: [], help: 'Total cache insertion duration, in microseconds' },
} as const satisfies Record<string, MetricDefinition>;

// ---------------------------------------------------------------------------------------------
// LLM engines (per model; recorded by the LlmMetricsObserver from engine step messages)

export const LLM_PREFIX = 'conveyor:';
/** Under this prefix too when --vllm-metric-names is on. */
export const VLLM_PREFIX = 'vllm:';
export const LLM_LABELS = ['model_name'] as const;

/** vLLM's TTFT buckets, seconds. */
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
/** vLLM's per-token latency buckets (inter-token latency and per-request TPOT), seconds. */
const TOKEN_LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
/** vLLM's request-phase buckets (e2e, queue, inference, prefill, decode), seconds. */
const REQUEST_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];
/** vLLM's tokens-per-step buckets. */
const ITERATION_TOKEN_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
/** 1-2-5 steps, as vLLM builds them for token counts (it stops at max_model_len; a fixed ceiling here). */
const TOKEN_COUNT_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000];

/** LLM definitions carry the name after the prefix. */
export const LLM_HISTOGRAMS = {
  timeToFirstToken: { name: 'time_to_first_token_seconds', kind: 'histogram', labels: LLM_LABELS, buckets: TTFT_BUCKETS, help: 'Seconds from arrival at the engine to the first output token' },
  interTokenLatency: {
    name: 'inter_token_latency_seconds',
    kind: 'histogram',
    labels: LLM_LABELS,
    buckets: TOKEN_LATENCY_BUCKETS,
    help: 'Seconds between consecutive token-bearing steps of a request',
  },
  timePerOutputToken: {
    name: 'request_time_per_output_token_seconds',
    kind: 'histogram',
    labels: LLM_LABELS,
    buckets: TOKEN_LATENCY_BUCKETS,
    help: 'Per request: decode seconds divided by (output tokens - 1)',
  },
  e2eLatency: { name: 'e2e_request_latency_seconds', kind: 'histogram', labels: LLM_LABELS, buckets: REQUEST_LATENCY_BUCKETS, help: 'Seconds from arrival to the last output token' },
  queueTime: { name: 'request_queue_time_seconds', kind: 'histogram', labels: LLM_LABELS, buckets: REQUEST_LATENCY_BUCKETS, help: 'Seconds from arrival until first scheduled' },
  inferenceTime: { name: 'request_inference_time_seconds', kind: 'histogram', labels: LLM_LABELS, buckets: REQUEST_LATENCY_BUCKETS, help: 'Seconds from first scheduled to the last output token' },
  prefillTime: { name: 'request_prefill_time_seconds', kind: 'histogram', labels: LLM_LABELS, buckets: REQUEST_LATENCY_BUCKETS, help: 'Seconds from first scheduled to the first output token' },
  decodeTime: { name: 'request_decode_time_seconds', kind: 'histogram', labels: LLM_LABELS, buckets: REQUEST_LATENCY_BUCKETS, help: 'Seconds from the first to the last output token' },
  requestPromptTokens: { name: 'request_prompt_tokens', kind: 'histogram', labels: LLM_LABELS, buckets: TOKEN_COUNT_BUCKETS, help: 'Prompt length of each finished request, tokens' },
  requestGenerationTokens: { name: 'request_generation_tokens', kind: 'histogram', labels: LLM_LABELS, buckets: TOKEN_COUNT_BUCKETS, help: 'Output length of each finished request, tokens' },
  iterationTokens: {
    name: 'iteration_tokens_total',
    kind: 'histogram',
    labels: LLM_LABELS,
    buckets: ITERATION_TOKEN_BUCKETS,
    help: 'Tokens per engine step: prompts completing their prefill plus tokens generated',
  },
} as const satisfies Record<string, MetricDefinition>;

// Counter names include `_total` because that is the sample name vLLM's exporter writes and
// dashboards query (its Python client appends the suffix; prom-client does not).
export const LLM_COUNTERS = {
  promptTokens: { name: 'prompt_tokens_total', kind: 'counter', labels: LLM_LABELS, help: 'Prompt tokens of requests that produced their first token' },
  promptTokensCached: { name: 'prompt_tokens_cached_total', kind: 'counter', labels: LLM_LABELS, help: 'Of those prompt tokens, the ones found in the prefix cache' },
  generationTokens: { name: 'generation_tokens_total', kind: 'counter', labels: LLM_LABELS, help: 'Output tokens generated' },
  prefixCacheQueries: { name: 'prefix_cache_queries_total', kind: 'counter', labels: LLM_LABELS, help: 'Prompt tokens looked up in the prefix cache' },
  prefixCacheHits: { name: 'prefix_cache_hits_total', kind: 'counter', labels: LLM_LABELS, help: 'Prompt tokens the prefix cache lookups found' },
  preemptions: { name: 'num_preemptions_total', kind: 'counter', labels: LLM_LABELS, help: 'Requests preempted (their KV freed, to be recomputed)' },
  requestSuccess: { name: 'request_success_total', kind: 'counter', labels: [...LLM_LABELS, 'finished_reason'], help: 'Requests finished, by finish reason (stop, length, abort)' },
  // vLLM's spec_decode counters (speculative_config): drafts checked, tokens proposed, tokens accepted, and accepted by position in the draft.
  specDecodeNumDrafts: { name: 'spec_decode_num_drafts_total', kind: 'counter', labels: LLM_LABELS, help: 'Speculative decoding: proposals checked (one per sequence and step)' },
  specDecodeNumDraftTokens: { name: 'spec_decode_num_draft_tokens_total', kind: 'counter', labels: LLM_LABELS, help: 'Speculative decoding: tokens proposed' },
  specDecodeNumAcceptedTokens: { name: 'spec_decode_num_accepted_tokens_total', kind: 'counter', labels: LLM_LABELS, help: 'Speculative decoding: proposed tokens accepted' },
  specDecodeNumAcceptedTokensPerPos: {
    name: 'spec_decode_num_accepted_tokens_per_pos_total',
    kind: 'counter',
    labels: [...LLM_LABELS, 'position'],
    help: 'Speculative decoding: proposed tokens accepted, by their position in the proposal (0 first)',
  },
} as const satisfies Record<string, MetricDefinition>;

export const LLM_GAUGES = {
  numRunning: { name: 'num_requests_running', kind: 'gauge', labels: LLM_LABELS, help: 'Requests in the running batch of the engine' },
  numWaiting: { name: 'num_requests_waiting', kind: 'gauge', labels: LLM_LABELS, help: 'Requests waiting for the engine to admit them' },
  kvCacheUsage: { name: 'kv_cache_usage_perc', kind: 'gauge', labels: LLM_LABELS, help: 'Fraction of KV cache blocks in use, 0 to 1' },
} as const satisfies Record<string, MetricDefinition>;

/**
 * Series only the `vllm:` set has: what routers built for vLLM read besides the families above
 * (the Gateway API Inference Extension's endpoint picker with engine-type vllm, vLLM's
 * production-stack router). The `gpu_` names are vLLM's older spellings of the same numbers.
 */
export const VLLM_ROUTING_METRICS = {
  /** Value: seconds since the epoch of the latest change; the picker reads the labels of the newest series. */
  loraRequestsInfo: {
    name: 'lora_requests_info',
    kind: 'gauge',
    labels: ['max_lora', 'running_lora_adapters', 'waiting_lora_adapters'],
    help: 'LoRA adapters: the most one batch may hold, and the ones running and waiting (comma-separated); the value is when this was last updated, seconds since the epoch',
  },
  /** Value 1; the numbers are in the labels, as vLLM exports its cache config. */
  cacheConfigInfo: {
    name: 'cache_config_info',
    kind: 'gauge',
    labels: [...LLM_LABELS, 'block_size', 'num_gpu_blocks'],
    help: 'KV cache configuration: tokens per block and blocks in the pool (value 1)',
  },
  gpuCacheUsage: { name: 'gpu_cache_usage_perc', kind: 'gauge', labels: LLM_LABELS, help: 'Older name of kv_cache_usage_perc: fraction of KV cache blocks in use, 0 to 1' },
  gpuPrefixCacheHitRate: {
    name: 'gpu_prefix_cache_hit_rate',
    kind: 'gauge',
    labels: LLM_LABELS,
    help: 'Prefix cache hits / queries in tokens since the model loaded, 0 to 1 (0 before any query)',
  },
  gpuPrefixCacheHits: { name: 'gpu_prefix_cache_hits_total', kind: 'counter', labels: LLM_LABELS, help: 'Older name of prefix_cache_hits_total: prompt tokens the prefix cache lookups found' },
  gpuPrefixCacheQueries: { name: 'gpu_prefix_cache_queries_total', kind: 'counter', labels: LLM_LABELS, help: 'Older name of prefix_cache_queries_total: prompt tokens looked up in the prefix cache' },
} as const satisfies Record<string, MetricDefinition>;

/**
 * Which server's metric names /metrics speaks besides Triton's (always exported): `conveyor`
 * (the LLM families under `conveyor:` only) or `vllm` (the same again under `vllm:`, plus
 * VLLM_ROUTING_METRICS), for routers and autoscalers that pick pods by engine type.
 */
export const METRICS_ENGINE_TYPES = ['conveyor', 'vllm'] as const;
export type MetricsEngineType = (typeof METRICS_ENGINE_TYPES)[number];

/** The prefixes the LLM families are exported under for an engine type. */
export const llmPrefixes = (engineType: MetricsEngineType): readonly string[] => (engineType === 'vllm' ? [LLM_PREFIX, VLLM_PREFIX] : [LLM_PREFIX]);

/** The finish reasons request_success_total is labelled with (vLLM's). */
export const FINISHED_REASONS = ['stop', 'length', 'abort'] as const;

// ---------------------------------------------------------------------------------------------
// Process (prom-client's default metrics, plus worker liveness read at scrape time)

/** Sampling resolution of nodejs_eventloop_lag_* in ms: fine enough to see a 100 ms stall. */
export const EVENT_LOOP_MONITORING_PRECISION_MS = 10;

export const PROCESS_METRICS = {
  workerAlive: { name: 'conveyor_worker_alive', kind: 'gauge', labels: [...TRITON_LABELS, 'worker'], help: 'Whether each worker thread (model instance or LLM engine) is running: 1 alive, 0 dead' },
  workerRestarts: {
    name: 'conveyor_worker_restarts_total',
    kind: 'counter',
    labels: TRITON_LABELS,
    help: 'Worker threads (model instances or LLM engines) restarted after a crash since the version loaded',
  },
} as const satisfies Record<string, MetricDefinition>;

// ---------------------------------------------------------------------------------------------
// Model lifecycle (per model; recorded by the model residency: on-demand loads, idle unloads, evictions, sleep)

export const LIFECYCLE_LABELS = ['model'] as const;
/** Why a model was unloaded: its keep_alive ran out, it made room for another, it was put to sleep, or it was asked to go. */
export const UNLOAD_REASONS = ['idle', 'evicted', 'sleep', 'explicit'] as const;
/** Loads of a tiny model take a second, of a large one minutes. */
const LOAD_SECONDS_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640];

export const LIFECYCLE_METRICS = {
  loads: { name: 'conveyor_model_loads_total', kind: 'counter', labels: [...LIFECYCLE_LABELS, 'result'], help: 'Model loads started on demand or by wake_up, by result (success, failure)' },
  unloads: { name: 'conveyor_model_unloads_total', kind: 'counter', labels: [...LIFECYCLE_LABELS, 'reason'], help: 'Models unloaded by the residency, by reason (idle, evicted, sleep, explicit)' },
  evictions: { name: 'conveyor_model_evictions_total', kind: 'counter', labels: LIFECYCLE_LABELS, help: 'Idle models unloaded to make room for another (least recently used first)' },
  loadDuration: {
    name: 'conveyor_model_load_duration_seconds',
    kind: 'histogram',
    labels: LIFECYCLE_LABELS,
    buckets: LOAD_SECONDS_BUCKETS,
    help: 'Seconds a successful load on demand or wake_up took',
  },
  loaded: { name: 'conveyor_model_loaded', kind: 'gauge', labels: LIFECYCLE_LABELS, help: 'Whether the model is loaded now: 1 loaded, 0 not (sleeping or unloaded)' },
} as const satisfies Record<string, MetricDefinition>;

/** Every definition with its full exported name(s) under an engine type, for documentation and tests. */
export function allMetricNames(engineType: MetricsEngineType): string[] {
  return exportedDefinitions(engineType).map((d) => d.name);
}

/** Every family /metrics declares under an engine type (process metrics aside), with its full name: the contract table. */
export function exportedDefinitions(engineType: MetricsEngineType): MetricDefinition[] {
  const llm = [LLM_HISTOGRAMS, LLM_COUNTERS, LLM_GAUGES].flatMap((group) => Object.values(group) as MetricDefinition[]);
  const prefixed = (prefix: string, defs: readonly MetricDefinition[]) => defs.map((d) => ({ ...d, name: `${prefix}${d.name}` }));
  const vllmOnly = engineType === 'vllm' ? prefixed(VLLM_PREFIX, Object.values(VLLM_ROUTING_METRICS)) : [];
  return [
    ...Object.values(TRITON_METRICS),
    ...Object.values(RESPONSE_CACHE_METRICS),
    ...llmPrefixes(engineType).flatMap((p) => prefixed(p, llm)),
    ...vllmOnly,
    ...Object.values(PROCESS_METRICS),
    ...Object.values(LIFECYCLE_METRICS),
  ];
}
