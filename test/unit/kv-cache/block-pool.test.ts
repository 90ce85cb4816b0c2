import { describe, expect, it } from 'vitest';
import { BlockPool } from '../../../src/kv-cache/block-pool.js';

const noTables = (pool: BlockPool) => Int32Array.from({ length: pool.numBlocks }, (_, b) => pool.refCount(b));

describe('BlockPool', () => {
  it('hands out free blocks before evicting cached ones', () => {
    const pool = new BlockPool(3, 2);
    const [a, b] = pool.take(2);
    pool.register(a!, 111, [1, 2], 0);
    pool.release(a!); // cached, evictable
    pool.release(b!); // free
    expect(pool.numFreeBlocks).toBe(3);
    expect(pool.numEvictableBlocks).toBe(1);
    const next = pool.take(2);
    expect(next).not.toContain(a);
    expect(pool.lookup(111, [1, 2], 0)).toBe(a);
    pool.take(1); // now the cached block must go
    expect(pool.lookup(111, [1, 2], 0)).toBeUndefined();
    expect(pool.hashOf(a!)).toBeNull();
    pool.checkIntegrity(noTables(pool));
  });

  it('never serves a block whose tokens differ, even when the hash matches (a collision)', () => {
    const pool = new BlockPool(2, 2);
    const [a] = pool.take(1);
    pool.register(a!, 42, [5, 6], 0);
    expect(pool.lookup(42, [5, 6], 0)).toBe(a);
    expect(pool.lookup(42, [5, 7], 0)).toBeUndefined();
    expect(pool.lookup(42, [9, 5, 6], 1)).toBe(a);
  });

  it('publishes a hash once and never re-hashes a block', () => {
    const pool = new BlockPool(3, 1);
    const [a, b] = pool.take(2);
    expect(pool.register(a!, 7, [1], 0)).toBe(true);
    expect(pool.register(b!, 7, [1], 0)).toBe(false);
    expect(pool.register(a!, 8, [2], 0)).toBe(false);
    expect(pool.hashOf(a!)).toBe(7);
    expect(pool.hashOf(b!)).toBeNull();
  });

  it('refuses operations that would break the invariants', () => {
    const pool = new BlockPool(2, 4);
    expect(() => pool.take(3)).toThrow(/2 free blocks/);
    expect(() => pool.release(0)).toThrow(/ref count is 0/);
    expect(() => pool.acquire(0)).toThrow(/free, not cached/);
    expect(() => pool.register(0, 1, [1, 2, 3, 4], 0)).toThrow(/not in use/);
    expect(() => new BlockPool(0, 16)).toThrow(RangeError);
    expect(() => new BlockPool(4, 0)).toThrow(RangeError);
    pool.checkIntegrity(noTables(pool));
  });
});
