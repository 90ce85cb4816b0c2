// The server-wide series of Triton's local response cache, computed at scrape time from the
// cache's own counts. Without a cache (no --cache-config) the families have no samples.

import type { Registry } from 'prom-client';
import type { ResponseCacheSummary } from '../contracts/response-cache.js';
import { RESPONSE_CACHE_METRICS } from './metric-definitions.js';
import { SnapshotFamily, type Sample } from './snapshot-family.js';

type CacheKey = keyof typeof RESPONSE_CACHE_METRICS;

/** Each family's value from one reading; durations in whole microseconds, as Triton's cache reports them. */
export function responseCacheValues(s: ResponseCacheSummary): Record<CacheKey, number> {
  return {
    utilization: s.utilization,
    entries: s.entries,
    lookups: s.lookups,
    hits: s.hits,
    misses: s.misses,
    evictions: s.evictions,
    lookupDuration: Math.floor(s.lookupNs / 1000),
    insertionDuration: Math.floor(s.insertionNs / 1000),
  };
}

export function registerResponseCacheMetrics(registry: Registry, read: () => ResponseCacheSummary | undefined): void {
  for (const key of Object.keys(RESPONSE_CACHE_METRICS) as CacheKey[]) {
    new SnapshotFamily(RESPONSE_CACHE_METRICS[key], (): Sample[] => {
      const summary = read();
      return summary === undefined ? [] : [{ labels: {}, value: responseCacheValues(summary)[key] }];
    }).register(registry);
  }
}
