// The bounded in-memory store behind `store: true`, previous_response_id and the
// /v1/responses/{id} routes: at most `maxEntries` responses, each kept `ttlMs` after it was last
// written. Map order is insertion order and a write re-inserts, so the first entry is always the
// least recently written one and eviction is O(1). Reads do not refresh an entry: a TTL that
// reads could extend would keep a polled response alive forever. The clock is injected so
// expiry is tested without waiting.

export interface StoreOptions {
  readonly maxEntries: number;
  readonly ttlMs: number;
  /** Milliseconds on any monotonic-enough clock; Date.now by default. */
  readonly now?: () => number;
}

interface Entry<T> {
  readonly value: T;
  readonly expiresAt: number;
}

export class ExpiringStore<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly now: () => number;

  constructor(private readonly options: StoreOptions) {
    if (!(options.maxEntries >= 1) || !(options.ttlMs > 0)) throw new RangeError('a store needs maxEntries >= 1 and ttlMs > 0');
    this.now = options.now ?? Date.now;
  }

  /** Stores (or replaces) `id`, evicting the least recently written entries past the bound. */
  set(id: string, value: T): void {
    this.entries.delete(id);
    this.entries.set(id, { value, expiresAt: this.now() + this.options.ttlMs });
    this.sweep();
    while (this.entries.size > this.options.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  /** The live value, or undefined when it was never stored, was deleted, evicted or expired. */
  get(id: string): T | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(id);
      return undefined;
    }
    return entry.value;
  }

  /** True when a live entry was removed. */
  delete(id: string): boolean {
    const live = this.get(id) !== undefined;
    this.entries.delete(id);
    return live;
  }

  /** Every live value, least recently written first. */
  *values(): Generator<T> {
    this.sweep();
    for (const entry of this.entries.values()) yield entry.value;
  }

  get size(): number {
    this.sweep();
    return this.entries.size;
  }

  /** Drops expired entries from the front: every write pushes its entry to the back with the latest expiry. */
  private sweep(): void {
    const now = this.now();
    for (const [id, entry] of this.entries) {
      if (entry.expiresAt > now) return;
      this.entries.delete(id);
    }
  }
}
