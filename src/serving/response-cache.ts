// Triton's `local` response cache: one store for the whole server, every model that enables
// caching sharing it, least recently used entries evicted first so that the stored values never
// exceed the configured bytes. Pure: keys are strings the caller hashed, values are whatever the
// caller stores with the byte size it states, and time is an injected clock (the durations are
// the cache's own, as Triton's cache reports them in its server-wide metrics).

import type { ResponseCacheSummary } from '../contracts/response-cache.js';

interface Entry<V> {
  readonly value: V;
  readonly bytes: number;
  /** Whose entry it is (a loaded model version): dropped together when it unloads. */
  readonly owner: object;
}

export interface ResponseCacheOptions {
  /** --cache-config local,size=N. */
  readonly capacityBytes: number;
  /** Milliseconds, monotonic (performance.now unless a test injects one). */
  readonly clock?: () => number;
}

export class ResponseCache<V> {
  // A Map iterates in insertion order: re-inserting on every hit keeps the least recent first.
  private readonly entries = new Map<string, Entry<V>>();
  private readonly clock: () => number;
  private usedBytes = 0;
  private lookups = 0;
  private hits = 0;
  private evictions = 0;
  private lookupNs = 0;
  private insertionNs = 0;

  constructor(private readonly options: ResponseCacheOptions) {
    this.clock = options.clock ?? (() => performance.now());
  }

  get capacityBytes(): number {
    return this.options.capacityBytes;
  }

  /** The stored value (now the most recently used) or undefined, and how long the lookup took in ns. */
  lookup(key: string): { readonly value: V | undefined; readonly ns: number } {
    const started = this.clock();
    const entry = this.entries.get(key);
    this.lookups += 1;
    if (entry !== undefined) {
      this.hits += 1;
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    const ns = this.elapsedNs(started);
    this.lookupNs += ns;
    return { value: entry?.value, ns };
  }

  /**
   * Stores `value` under `key` as the most recently used, evicting the least recently used until
   * it fits. A value larger than the whole cache is not stored (and evicts nothing). Storing a key
   * again (two identical requests missed together) replaces the entry.
   */
  insert(key: string, value: V, bytes: number, owner: object): { readonly stored: boolean; readonly ns: number } {
    const started = this.clock();
    const stored = bytes <= this.options.capacityBytes;
    if (stored) {
      this.remove(key);
      for (const [oldest, entry] of this.entries) {
        if (this.usedBytes + bytes <= this.options.capacityBytes) break;
        this.entries.delete(oldest);
        this.usedBytes -= entry.bytes;
        this.evictions += 1;
      }
      this.entries.set(key, { value, bytes, owner });
      this.usedBytes += bytes;
    }
    const ns = this.elapsedNs(started);
    this.insertionNs += ns;
    return { stored, ns };
  }

  /** Removes every entry `owner` stored (its model version unloaded or was replaced); returns how many. */
  drop(owner: object): number {
    let dropped = 0;
    for (const [key, entry] of this.entries) {
      if (entry.owner !== owner) continue;
      this.remove(key);
      dropped += 1;
    }
    return dropped;
  }

  summary(): ResponseCacheSummary {
    return {
      entries: this.entries.size,
      lookups: this.lookups,
      hits: this.hits,
      misses: this.lookups - this.hits,
      evictions: this.evictions,
      utilization: this.options.capacityBytes > 0 ? this.usedBytes / this.options.capacityBytes : 0,
      lookupNs: this.lookupNs,
      insertionNs: this.insertionNs,
    };
  }

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.usedBytes -= entry.bytes;
  }

  private elapsedNs(startedMs: number): number {
    return Math.max(0, Math.round((this.clock() - startedMs) * 1e6));
  }
}
