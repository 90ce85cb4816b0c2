// The response cache's server-wide counts (src/serving/response-cache.ts keeps them, the metrics
// read them at scrape time as Triton's local cache exports them: nv_cache_*).

export interface ResponseCacheSummary {
  readonly entries: number;
  readonly lookups: number;
  readonly hits: number;
  readonly misses: number;
  readonly evictions: number;
  /** Stored bytes over the capacity, 0 to 1. */
  readonly utilization: number;
  /** Total time spent in lookups (hits and misses) and in insertions, ns. */
  readonly lookupNs: number;
  readonly insertionNs: number;
}
