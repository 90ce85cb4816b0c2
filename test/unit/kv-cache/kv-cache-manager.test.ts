import { afterEach, describe, expect, it } from 'vitest';
import type { KvCacheManager } from '../../../src/kv-cache/kv-cache-manager.js';
import { checkTrackedIntegrity, trackedKv } from '../../support/fake-model.js';

afterEach(checkTrackedIntegrity);

const BS = 4;
const seq = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

/** Admits `id` with a prefix lookup, as the scheduler does. */
function admit(kv: KvCacheManager, id: string, tokens: readonly number[], numTokens = tokens.length, salt: string | null = null) {
  const prefix = kv.lookupPrefix(tokens, salt);
  return { ok: kv.allocate(id, numTokens, prefix), prefix };
}

/** Admits, "computes" every token, and publishes the full blocks. */
function prefill(kv: KvCacheManager, id: string, tokens: readonly number[], salt: string | null = null) {
  const r = admit(kv, id, tokens, tokens.length, salt);
  expect(r.ok).toBe(true);
  kv.commitComputed(id, tokens, tokens.length);
  return r.prefix;
}

function snapshot(kv: KvCacheManager, ids: readonly string[]) {
  return {
    stats: kv.stats(),
    tables: ids.map((id) => [...kv.blockTable(id)]),
    refs: Array.from({ length: kv.numTotalBlocks }, (_, b) => kv.refCount(b)),
  };
}

describe('KvCacheManager allocation', () => {
  it('allocates whole blocks, grows tables at the end and frees everything', () => {
    const kv = trackedKv({ numBlocks: 8, blockSize: BS });
    expect(admit(kv, 'a', seq(5)).ok).toBe(true);
    expect(kv.blockTable('a')).toHaveLength(2);
    const first = [...kv.blockTable('a')];
    expect(kv.allocate('a', 8)).toBe(true); // still two blocks
    expect(kv.blockTable('a')).toEqual(first);
    expect(kv.allocate('a', 9)).toBe(true);
    expect(kv.blockTable('a').slice(0, 2)).toEqual(first);
    expect(kv.blockTable('a')).toHaveLength(3);
    expect(kv.numFreeBlocks).toBe(5);
    expect(kv.stats().usage).toBeCloseTo(3 / 8);
    kv.checkIntegrity();
    kv.free('a');
    expect(kv.has('a')).toBe(false);
    expect(kv.numFreeBlocks).toBe(8);
  });

  it('fails all-or-nothing: no block, ref count, table or counter changes', () => {
    const kv = trackedKv({ numBlocks: 6, blockSize: BS });
    prefill(kv, 'a', seq(9)); // 3 blocks, 2 published
    kv.free('a'); // 2 evictable + 4 free
    prefill(kv, 'b', seq(8, 100)); // takes 2 free blocks
    const before = snapshot(kv, ['a', 'b', 'c']);
    // c hits a's two cached blocks (which then stop counting as free) and needs 3 more: only 2 remain.
    const big = admit(kv, 'c', [...seq(8), ...seq(12, 500)]);
    expect(big.prefix.numTokens).toBe(8);
    expect(big.ok).toBe(false);
    expect(kv.allocate('b', 8 + 5 * BS)).toBe(false);
    expect(snapshot(kv, ['a', 'b', 'c'])).toEqual(before);
    expect(kv.has('c')).toBe(false);
    kv.checkIntegrity();
    // The exact fit succeeds.
    expect(kv.allocate('b', 8 + 4 * BS)).toBe(true);
    expect(kv.numFreeBlocks).toBe(0);
  });

  it('rejects misuse that would corrupt the tables', () => {
    const kv = trackedKv({ numBlocks: 4, blockSize: BS });
    expect(() => kv.allocate('x', 4)).toThrow(/CachedPrefix/);
    prefill(kv, 'a', seq(4));
    expect(() => kv.allocate('a', 8, kv.lookupPrefix(seq(8), null))).toThrow(/already admitted/);
    expect(() => kv.commitComputed('nobody', seq(4), 4)).toThrow(/unknown request/);
  });
});

describe('KvCacheManager prefix caching', () => {
  it('finds the longest cached prefix only after its blocks are computed, and shares them', () => {
    const kv = trackedKv({ numBlocks: 16, blockSize: BS });
    const prompt = seq(10);
    admit(kv, 'a', prompt);
    expect(kv.lookupPrefix(prompt, null).numTokens).toBe(0); // allocated is not computed
    kv.commitComputed('a', prompt, 6); // one full block computed
    expect(kv.lookupPrefix(prompt, null).numTokens).toBe(4);
    kv.commitComputed('a', prompt, 10);
    const hit = kv.lookupPrefix([...seq(9), 77, 78], null);
    expect(hit.numTokens).toBe(8);
    expect(hit.blockIds).toEqual(kv.blockTable('a').slice(0, 2));
    expect(kv.allocate('b', 11, hit)).toBe(true);
    expect(kv.blockTable('b').slice(0, 2)).toEqual(kv.blockTable('a').slice(0, 2));
    for (const b of kv.blockTable('a').slice(0, 2)) expect(kv.refCount(b)).toBe(2);
    expect(kv.refCount(kv.blockTable('b')[2]!)).toBe(1);
    kv.free('a');
    for (const b of kv.blockTable('b').slice(0, 2)) expect(kv.refCount(b)).toBe(1);
  });

  it('never covers the whole sequence: one token is always left to compute', () => {
    const kv = trackedKv({ numBlocks: 16, blockSize: BS });
    prefill(kv, 'a', seq(12));
    kv.free('a');
    expect(kv.lookupPrefix(seq(12), null).numTokens).toBe(8);
    expect(kv.lookupPrefix(seq(13), null).numTokens).toBe(12);
    expect(kv.lookupPrefix(seq(1), null).numTokens).toBe(0);
  });

  it('stops at the first differing block, and a changed early block breaks the whole chain', () => {
    const kv = trackedKv({ numBlocks: 16, blockSize: BS });
    prefill(kv, 'a', seq(17));
    kv.free('a');
    const changedMiddle = seq(17);
    changedMiddle[9] = 999;
    expect(kv.lookupPrefix(changedMiddle, null).numTokens).toBe(8);
    const changedFirst = seq(17);
    changedFirst[0] = 999;
    expect(kv.lookupPrefix(changedFirst, null).numTokens).toBe(0);
  });

  it('keeps namespaces (cache salt) apart', () => {
    const kv = trackedKv({ numBlocks: 16, blockSize: BS });
    prefill(kv, 'a', seq(9), 'lora-1');
    kv.free('a');
    expect(kv.lookupPrefix(seq(9), 'lora-1').numTokens).toBe(8);
    expect(kv.lookupPrefix(seq(9), 'lora-2').numTokens).toBe(0);
    expect(kv.lookupPrefix(seq(9), null).numTokens).toBe(0);
  });

  it('counts queried and hit tokens at admission', () => {
    const kv = trackedKv({ numBlocks: 16, blockSize: BS });
    prefill(kv, 'a', seq(10));
    const prefix = prefill(kv, 'b', seq(10));
    expect(prefix.numTokens).toBe(8);
    kv.lookupPrefix(seq(10), null); // a lookup alone is not a query
    expect(kv.stats()).toMatchObject({ prefixCacheQueries: 20, prefixCacheHits: 8 });
  });

  it('keeps freed cached blocks and evicts the least recently released first, tail blocks before heads', () => {
    const kv = trackedKv({ numBlocks: 6, blockSize: BS });
    prefill(kv, 'a', seq(9)); // blocks a0 a1 published, a2 partial
    prefill(kv, 'b', seq(9, 100)); // b0 b1 published, b2 partial
    const [a0, a1] = kv.blockTable('a');
    const [b0, b1] = kv.blockTable('b');
    kv.free('a');
    kv.free('b');
    expect(kv.stats()).toMatchObject({ numFreeBlocks: 6, numEvictableBlocks: 4, usage: 0 });
    // Touch a's prefix so b's blocks become the least recently used.
    prefill(kv, 'a2', seq(9));
    kv.free('a2');
    // Two unhashed blocks are free; needing four evicts two cached ones: b's tail, then b's head.
    expect(admit(kv, 'c', seq(16, 500)).ok).toBe(true);
    expect(kv.blockTable('c')).toEqual(expect.arrayContaining([b0, b1]));
    expect(kv.lookupPrefix(seq(9, 100), null).numTokens).toBe(0);
    expect(kv.lookupPrefix(seq(9), null).blockIds).toEqual([a0, a1]);
    kv.free('c');
  });

  it('evicts a tail block before its head when a request is freed', () => {
    const kv = trackedKv({ numBlocks: 3, blockSize: BS });
    prefill(kv, 'a', seq(12)); // three published blocks
    kv.free('a');
    expect(admit(kv, 'c', seq(3, 500)).ok).toBe(true); // evicts exactly one: a's last block
    expect(kv.lookupPrefix(seq(13), null).numTokens).toBe(8);
    kv.free('c');
  });

  it('revives an evictable block on a hit so it is not evicted under its new holder', () => {
    const kv = trackedKv({ numBlocks: 4, blockSize: BS });
    prefill(kv, 'a', seq(5)); // a0 published
    const [a0] = kv.blockTable('a');
    kv.free('a');
    const hit = kv.lookupPrefix(seq(5), null);
    expect(kv.allocate('b', 5, hit)).toBe(true);
    expect(kv.blockTable('b')[0]).toBe(a0);
    expect(kv.refCount(a0!)).toBe(1);
    // Only two free blocks remain; the shared one is not among them.
    expect(kv.numFreeBlocks).toBe(2);
    expect(admit(kv, 'c', seq(8, 50)).ok).toBe(true);
    expect(kv.blockTable('c')).not.toContain(a0);
  });

  it('publishes one block per content: a duplicate computed elsewhere stays private', () => {
    const kv = trackedKv({ numBlocks: 8, blockSize: BS });
    admit(kv, 'a', seq(5));
    admit(kv, 'b', seq(5)); // same prompt admitted before a's blocks were computed
    kv.commitComputed('a', seq(5), 5);
    kv.commitComputed('b', seq(5), 5);
    expect(kv.lookupPrefix(seq(5), null).blockIds).toEqual([kv.blockTable('a')[0]]);
    kv.free('b');
    expect(kv.stats().numEvictableBlocks).toBe(0); // b's copy went back to the plain free list
  });

  it('refuses a prefix whose blocks were evicted after the lookup', () => {
    const kv = trackedKv({ numBlocks: 2, blockSize: BS });
    prefill(kv, 'a', seq(5));
    kv.free('a');
    const stale = kv.lookupPrefix(seq(5), null);
    expect(admit(kv, 'x', seq(8, 100)).ok).toBe(true); // evicts a's block
    expect(() => kv.allocate('b', 5, stale)).toThrow(/stale/);
    kv.free('x');
  });

  it('can be turned off: no hits, no published blocks, no counters', () => {
    const kv = trackedKv({ numBlocks: 8, blockSize: BS, enablePrefixCaching: false });
    prefill(kv, 'a', seq(9));
    kv.free('a');
    expect(kv.lookupPrefix(seq(9), null).numTokens).toBe(0);
    expect(kv.stats()).toMatchObject({ numEvictableBlocks: 0, prefixCacheQueries: 0, prefixCacheHits: 0 });
  });
});

describe('KvCacheManager.checkIntegrity', () => {
  it('detects a ref count that disagrees with the block tables', () => {
    const kv = trackedKv({ numBlocks: 4, blockSize: BS });
    prefill(kv, 'a', seq(4));
    const pool = (kv as unknown as { pool: { refCounts: Int32Array } }).pool;
    pool.refCounts[kv.blockTable('a')[0]!] = 2;
    expect(() => kv.checkIntegrity()).toThrow(/ref 2 but 1 table entries/);
    pool.refCounts[kv.blockTable('a')[0]!] = 1;
  });

  it('detects a block that is both free and in a table', () => {
    const kv = trackedKv({ numBlocks: 4, blockSize: BS });
    prefill(kv, 'a', seq(3));
    const pool = (kv as unknown as { pool: { free: number[] } }).pool;
    pool.free.push(kv.blockTable('a')[0]!);
    expect(() => kv.checkIntegrity()).toThrow(/integrity/);
    pool.free.pop();
  });

  it('detects a block that is nowhere', () => {
    const kv = trackedKv({ numBlocks: 4, blockSize: BS });
    const pool = (kv as unknown as { pool: { free: number[] } }).pool;
    const lost = pool.free.pop()!;
    expect(() => kv.checkIntegrity()).toThrow(/neither free, evictable nor in use/);
    pool.free.push(lost);
  });
});
