// The block pool: every KV block is in exactly one of three places.
//   free       ref count 0, no hash: handed out first.
//   evictable  ref count 0, hashed: its KV is kept for a later prefix hit until space is needed,
//              then evicted least recently released first.
//   in use     ref count > 0 (hashed or not): held by that many requests' block tables.
// Only KvCacheManager calls the mutating methods; nothing outside kv-cache/ sees this class.

import type { BlockHash } from './block-hash.js';

const NO_HASH = -1;

export class BlockPool {
  private readonly refCounts: Int32Array;
  /** NO_HASH, or the hash the block is registered under in `byHash`. */
  private readonly hashes: Float64Array;
  /**
   * The token ids of each hashed block ([numBlocks, blockSize]), compared on every hit so a hash
   * collision can never serve wrong KV. One preallocated array: publishing a block allocates nothing.
   */
  private readonly contents: Int32Array;
  /** A stack: the most recently freed block is reused first. */
  private readonly free: number[] = [];
  /** Insertion order is release order, so the first element is the least recently used. */
  private readonly evictable = new Set<number>();
  private readonly byHash = new Map<BlockHash, number>();

  constructor(
    readonly numBlocks: number,
    readonly blockSize: number,
    /** Told the hash of every cached block that eviction drops (the KV events' BlockRemoved). */
    private readonly onEvicted?: (hash: BlockHash) => void,
  ) {
    if (!Number.isInteger(numBlocks) || numBlocks < 1) throw new RangeError(`numBlocks must be a positive integer, got ${numBlocks}`);
    if (!Number.isInteger(blockSize) || blockSize < 1) throw new RangeError(`blockSize must be a positive integer, got ${blockSize}`);
    this.refCounts = new Int32Array(numBlocks);
    this.hashes = new Float64Array(numBlocks).fill(NO_HASH);
    this.contents = new Int32Array(numBlocks * blockSize);
    for (let b = numBlocks - 1; b >= 0; b--) this.free.push(b);
  }

  /** Blocks that `take` can hand out now: free plus evictable. */
  get numFreeBlocks(): number {
    return this.free.length + this.evictable.size;
  }

  get numEvictableBlocks(): number {
    return this.evictable.size;
  }

  refCount(block: number): number {
    return this.refCounts[block]!;
  }

  hashOf(block: number): BlockHash | null {
    const h = this.hashes[block]!;
    return h === NO_HASH ? null : h;
  }

  /** The block cached under `hash` whose tokens equal tokenIds[start, start + blockSize), if any. */
  lookup(hash: BlockHash, tokenIds: readonly number[], start: number): number | undefined {
    const block = this.byHash.get(hash);
    if (block === undefined) return undefined;
    const base = block * this.blockSize;
    for (let i = 0; i < this.blockSize; i++) if (this.contents[base + i] !== tokenIds[start + i]) return undefined;
    return block;
  }

  /**
   * Hands out `count` blocks with ref count 1, evicting the least recently used cached blocks
   * once the free stack is empty. The caller checks numFreeBlocks first: running short here is a bug.
   */
  take(count: number): number[] {
    if (count > this.numFreeBlocks) throw new Error(`BlockPool.take(${count}) with ${this.numFreeBlocks} free blocks`);
    const taken: number[] = [];
    for (let i = 0; i < count; i++) {
      const block = this.free.pop() ?? this.evictOldest();
      this.refCounts[block] = 1;
      taken.push(block);
    }
    return taken;
  }

  /** One more holder of an already cached block (a prefix hit). */
  acquire(block: number): void {
    if (this.refCounts[block] === 0) {
      if (!this.evictable.delete(block)) throw new Error(`acquire(${block}): block is free, not cached`);
    }
    this.refCounts[block]! += 1;
  }

  /** One holder fewer; at zero a hashed block stays cached (most recently used), others become free. */
  release(block: number): void {
    const ref = this.refCounts[block]!;
    if (ref < 1) throw new Error(`release(${block}): ref count is ${ref}`);
    this.refCounts[block] = ref - 1;
    if (ref > 1) return;
    if (this.hashes[block] === NO_HASH) this.free.push(block);
    else this.evictable.add(block);
  }

  /**
   * Publishes an in-use block whose KV now holds tokenIds[start, start + blockSize). Returns false
   * when another block already holds that content: the block stays private rather than being
   * swapped out, so block tables only ever grow at the end.
   */
  register(block: number, hash: BlockHash, tokenIds: readonly number[], start: number): boolean {
    if (this.refCounts[block]! < 1) throw new Error(`register(${block}): block is not in use`);
    if (this.hashes[block] !== NO_HASH || this.byHash.has(hash)) return false;
    this.hashes[block] = hash;
    const base = block * this.blockSize;
    for (let i = 0; i < this.blockSize; i++) this.contents[base + i] = tokenIds[start + i]!;
    this.byHash.set(hash, block);
    return true;
  }

  /** The hashes of every cached block (in use or evictable): what a prefix lookup can hit. */
  cachedHashes(): IterableIterator<BlockHash> {
    return this.byHash.keys();
  }

  /**
   * Throws unless every block is in exactly one place and ref counts equal `expectedRefs` (the
   * number of block-table entries naming each block).
   */
  checkIntegrity(expectedRefs: Int32Array): void {
    const fail = (why: string): never => {
      throw new Error(`KV block pool integrity: ${why}`);
    };
    const seen = new Uint8Array(this.numBlocks);
    for (const b of this.free) {
      if (seen[b]) fail(`block ${b} is on the free list twice`);
      seen[b] = 1;
      if (this.refCounts[b] !== 0 || this.hashes[b] !== NO_HASH) fail(`free block ${b} has ref ${this.refCounts[b]} / hash ${this.hashes[b]}`);
    }
    for (const b of this.evictable) {
      if (seen[b]) fail(`block ${b} is both free and evictable`);
      seen[b] = 1;
      if (this.refCounts[b] !== 0) fail(`evictable block ${b} has ref ${this.refCounts[b]}`);
      if (this.byHash.get(this.hashes[b]!) !== b) fail(`evictable block ${b} is not in the hash map`);
    }
    let numInUse = 0;
    for (let b = 0; b < this.numBlocks; b++) {
      if (this.refCounts[b] !== expectedRefs[b]) fail(`block ${b} has ref ${this.refCounts[b]} but ${expectedRefs[b]} table entries`);
      if (!seen[b]) {
        if (this.refCounts[b]! < 1) fail(`block ${b} is neither free, evictable nor in use`);
        numInUse++;
      }
    }
    if (this.free.length + this.evictable.size + numInUse !== this.numBlocks) fail('free + evictable + in use != total');
    for (const [hash, b] of this.byHash) if (this.hashes[b] !== hash) fail(`hash map entry for block ${b} is stale`);
    for (let b = 0; b < this.numBlocks; b++) {
      if (this.hashes[b] !== NO_HASH && this.byHash.get(this.hashes[b]!) !== b) fail(`hashed block ${b} is missing from the hash map`);
    }
  }

  private evictOldest(): number {
    const block = this.evictable.values().next().value;
    if (block === undefined) throw new Error('BlockPool: no block to evict');
    this.evictable.delete(block);
    const hash = this.hashes[block]!;
    this.byHash.delete(hash);
    this.hashes[block] = NO_HASH;
    this.onEvicted?.(hash);
    return block;
  }
}
