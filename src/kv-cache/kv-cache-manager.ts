// The KV cache manager: per-request block tables over the block pool, with prefix caching.
// The scheduler asks three things of it — what prefix of a prompt is cached (lookupPrefix), room
// for the tokens it schedules (allocate: all-or-nothing) and to let a request go (free) — and
// reports progress (commitComputed) so newly computed full blocks become shareable.
//
// Blocks are published only once their KV has been computed (after the step that wrote them),
// never at allocation: a runner that gathers past KV before the forward pass must not be handed
// a block that the same pass is still filling.
//
// Sliding-window models keep every block of a running sequence too. Where every layer is windowed
// (Mistral-style) the blocks wholly behind the window could be freed, but not done: the
// PastKeyValuesRunner gathers a sequence's whole past from its blocks and the paged graph reads
// block tables with no hole (both would need a "freed" sentinel handled), preemption's recompute
// and a prefix-cache hit later in the prompt would need the freed positions again, and a freed
// shared prefix block would have to leave the hash index without evicting it from the sequences
// sharing it. Only the native kernel already never reads them.

import { BlockPool } from './block-pool.js';
import { type BlockHash, hashBlock, rootHash } from './block-hash.js';
import { DEFAULT_BLOCK_SIZE } from './budget.js';
import type { KvCacheEvent } from './cache-events.js';

export interface KvCacheOptions {
  readonly numBlocks: number;
  /** Tokens per block; 16 by default (vLLM's). */
  readonly blockSize?: number;
  /** On by default. */
  readonly enablePrefixCaching?: boolean;
  /** Record KV cache events for takeEvents() (off by default: nothing is kept when nobody publishes). */
  readonly recordEvents?: boolean;
}

/** The result of a lookup, consumed by the `allocate` that admits the request (nothing may run in between). */
export interface CachedPrefix {
  /** The cached full blocks, in position order. */
  readonly blockIds: readonly number[];
  /** Their chain hashes, so committing later blocks continues the chain. */
  readonly hashes: readonly BlockHash[];
  /** blockIds.length × blockSize; always less than the looked-up length. */
  readonly numTokens: number;
  /** The tokens looked up (for the hit-rate counters). */
  readonly numQueriedTokens: number;
  readonly cacheSalt: string | null;
}

interface RequestBlocks {
  readonly blockIds: number[];
  /** Chain hashes of the request's leading full, computed blocks. */
  readonly hashes: BlockHash[];
  readonly root: BlockHash;
}

export interface KvCacheStats {
  readonly numTotalBlocks: number;
  /** Free plus evictable cached blocks. */
  readonly numFreeBlocks: number;
  readonly numEvictableBlocks: number;
  /** In-use blocks / total, 0..1. */
  readonly usage: number;
  readonly prefixCacheQueries: number;
  readonly prefixCacheHits: number;
}

export class KvCacheManager {
  readonly blockSize: number;
  readonly enablePrefixCaching: boolean;
  private readonly pool: BlockPool;
  private readonly requests = new Map<string, RequestBlocks>();
  private queries = 0;
  private hits = 0;
  /** Events since the last takeEvents(), in the order they happened; null when not recording. */
  private events: KvCacheEvent[] | null;

  constructor(options: KvCacheOptions) {
    this.blockSize = options.blockSize ?? DEFAULT_BLOCK_SIZE;
    this.enablePrefixCaching = options.enablePrefixCaching ?? true;
    // A new pool is empty: the first event says so, so a subscriber still holding the blocks of
    // an engine that published here before (a restart, a reload) drops them.
    this.events = options.recordEvents ? [{ kind: 'cleared' }] : null;
    const onEvicted = this.events ? (hash: BlockHash) => this.events?.push({ kind: 'removed', blockHashes: [hash] }) : undefined;
    this.pool = new BlockPool(options.numBlocks, this.blockSize, onEvicted);
  }

  /** The KV cache events since the last call (empty when not recording), oldest first. */
  takeEvents(): KvCacheEvent[] {
    if (!this.events || this.events.length === 0) return [];
    const taken = this.events;
    this.events = [];
    return taken;
  }

  /** A snapshot of the hashes a prefix lookup can hit now (for checks against the published events). */
  cachedBlockHashes(): ReadonlySet<BlockHash> {
    return new Set(this.pool.cachedHashes());
  }

  get numTotalBlocks(): number {
    return this.pool.numBlocks;
  }

  get numFreeBlocks(): number {
    return this.pool.numFreeBlocks;
  }

  /** Blocks needed to hold `numTokens` positions. */
  blocksFor(numTokens: number): number {
    return Math.ceil(numTokens / this.blockSize);
  }

  has(requestId: string): boolean {
    return this.requests.has(requestId);
  }

  /** The request's block ids in position order; empty when it holds none. The runner only reads it. */
  blockTable(requestId: string): readonly number[] {
    return this.requests.get(requestId)?.blockIds ?? [];
  }

  /** Ref count of one block (for tests and debugging). */
  refCount(block: number): number {
    return this.pool.refCount(block);
  }

  /**
   * The longest run of cached full blocks at the start of `tokenIds`. It never covers the whole
   * sequence: the last token must be computed to produce logits, so at most
   * floor((n − 1) / blockSize) blocks count. Pure: nothing changes until `allocate`.
   */
  lookupPrefix(tokenIds: readonly number[], cacheSalt: string | null): CachedPrefix {
    const blockIds: number[] = [];
    const hashes: BlockHash[] = [];
    if (this.enablePrefixCaching) {
      const maxBlocks = Math.floor((tokenIds.length - 1) / this.blockSize);
      let parent = rootHash(cacheSalt);
      for (let i = 0; i < maxBlocks; i++) {
        const hash = hashBlock(parent, tokenIds, i * this.blockSize, this.blockSize);
        const block = this.pool.lookup(hash, tokenIds, i * this.blockSize);
        if (block === undefined) break;
        blockIds.push(block);
        hashes.push(hash);
        parent = hash;
      }
    }
    return { blockIds, hashes, numTokens: blockIds.length * this.blockSize, numQueriedTokens: tokenIds.length, cacheSalt };
  }

  /**
   * Makes the request's block table cover `numTokens` positions. A request without blocks is
   * being admitted and must pass the CachedPrefix just looked up for it (possibly empty).
   * All-or-nothing: false, with nothing changed, when the pool cannot supply every block.
   */
  allocate(requestId: string, numTokens: number, admission?: CachedPrefix): boolean {
    const existing = this.requests.get(requestId);
    if (existing) {
      if (admission) throw new Error(`allocate(${requestId}): already admitted`);
      const needed = this.blocksFor(numTokens) - existing.blockIds.length;
      if (needed <= 0) return true;
      if (needed > this.pool.numFreeBlocks) return false;
      existing.blockIds.push(...this.pool.take(needed));
      return true;
    }
    if (!admission) throw new Error(`allocate(${requestId}): a new request needs its CachedPrefix`);
    return this.admit(requestId, numTokens, admission);
  }

  /**
   * Hashes and publishes the request's full blocks whose KV is now computed. `tokenIds` is the
   * request's whole sequence; `numComputedTokens` counts positions whose KV is in the cache.
   */
  commitComputed(requestId: string, tokenIds: readonly number[], numComputedTokens: number): void {
    if (!this.enablePrefixCaching) return;
    const entry = this.requests.get(requestId);
    if (!entry) throw new Error(`commitComputed(${requestId}): unknown request`);
    const numFull = Math.min(Math.floor(numComputedTokens / this.blockSize), entry.blockIds.length);
    let run: number[] = [];
    for (let i = entry.hashes.length; i < numFull; i++) {
      const parent = i === 0 ? entry.root : entry.hashes[i - 1]!;
      const hash = hashBlock(parent, tokenIds, i * this.blockSize, this.blockSize);
      entry.hashes.push(hash);
      if (this.pool.register(entry.blockIds[i]!, hash, tokenIds, i * this.blockSize)) run.push(i);
      else run = this.recordStored(entry, tokenIds, run);
    }
    this.recordStored(entry, tokenIds, run);
  }

  /**
   * One BlockStored for a run of consecutive newly published chain positions. A block whose
   * content was already cached is not stored again, so it splits the run. Returns a new empty run.
   */
  private recordStored(entry: RequestBlocks, tokenIds: readonly number[], run: readonly number[]): number[] {
    if (this.events && run.length > 0) {
      const first = run[0]!;
      this.events.push({
        kind: 'stored',
        blockHashes: run.map((i) => entry.hashes[i]!),
        parentBlockHash: first === 0 ? null : entry.hashes[first - 1]!,
        tokenIds: tokenIds.slice(first * this.blockSize, (first + run.length) * this.blockSize),
        blockSize: this.blockSize,
      });
    }
    return [];
  }

  /**
   * Rolls the request's block table back to the blocks holding its first `numTokens` positions
   * (speculative decoding: the positions of rejected proposals were written, and are not the
   * sequence's). The blocks past them go back to the pool; the KV slots past `numTokens` in the
   * last block kept are overwritten when those positions are computed. Throws, changing nothing,
   * when that would drop a published (hashed) block: only blocks no other request can share,
   * never computed in full, may hold rejected positions.
   */
  truncate(requestId: string, numTokens: number): void {
    const entry = this.requests.get(requestId);
    if (!entry) throw new Error(`truncate(${requestId}): unknown request`);
    const keep = this.blocksFor(numTokens);
    if (keep < entry.hashes.length) throw new Error(`truncate(${requestId}, ${numTokens}): would drop published block ${keep} of ${entry.hashes.length}`);
    // Tail first, as free() releases: the freed blocks are uncached, so their order only sets which is reused first.
    while (entry.blockIds.length > keep) this.pool.release(entry.blockIds.pop()!);
  }

  /**
   * Releases every block the request holds. Tail blocks are released first so that, among its
   * cached blocks, the ones least likely to be shared (the end of the sequence) are evicted first.
   */
  free(requestId: string): void {
    const entry = this.requests.get(requestId);
    if (!entry) return;
    this.requests.delete(requestId);
    for (let i = entry.blockIds.length - 1; i >= 0; i--) this.pool.release(entry.blockIds[i]!);
  }

  stats(): KvCacheStats {
    const total = this.pool.numBlocks;
    const free = this.pool.numFreeBlocks;
    return {
      numTotalBlocks: total,
      numFreeBlocks: free,
      numEvictableBlocks: this.pool.numEvictableBlocks,
      usage: (total - free) / total,
      prefixCacheQueries: this.queries,
      prefixCacheHits: this.hits,
    };
  }

  /**
   * Throws unless free + evictable + in use = total, each block is in one place, ref counts equal
   * the block-table entries naming them, and no table names a block twice.
   */
  checkIntegrity(): void {
    const refs = new Int32Array(this.pool.numBlocks);
    for (const [id, entry] of this.requests) {
      const own = new Set(entry.blockIds);
      if (own.size !== entry.blockIds.length) throw new Error(`KV block pool integrity: request ${id} names a block twice`);
      if (entry.hashes.length > entry.blockIds.length) throw new Error(`KV block pool integrity: request ${id} hashed past its table`);
      for (const b of entry.blockIds) refs[b]! += 1;
    }
    this.pool.checkIntegrity(refs);
  }

  private admit(requestId: string, numTokens: number, prefix: CachedPrefix): boolean {
    const cached = prefix.blockIds;
    // A cached block that nobody holds is counted in numFreeBlocks; acquiring it removes it from
    // there, so it cannot also pay for a new block.
    let numReclaimed = 0;
    for (let i = 0; i < cached.length; i++) {
      const b = cached[i]!;
      if (this.pool.hashOf(b) !== prefix.hashes[i]) throw new Error(`allocate(${requestId}): stale CachedPrefix (block ${b} was evicted)`);
      if (this.pool.refCount(b) === 0) numReclaimed++;
    }
    const needed = Math.max(0, this.blocksFor(numTokens) - cached.length);
    if (needed > this.pool.numFreeBlocks - numReclaimed) return false;
    for (const b of cached) this.pool.acquire(b);
    const blockIds = [...cached, ...this.pool.take(needed)];
    this.requests.set(requestId, { blockIds, hashes: [...prefix.hashes], root: rootHash(prefix.cacheSalt) });
    if (this.enablePrefixCaching) {
      this.queries += prefix.numQueriedTokens;
      this.hits += prefix.numTokens;
    }
    return true;
  }
}
