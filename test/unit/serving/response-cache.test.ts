// The local response cache: an LRU bounded by the bytes it stores, shared by every model, with
// Triton's server-wide counts (entries, lookups, hits, misses, evictions, utilization, durations
// on the injected clock).
import { describe, expect, it } from 'vitest';
import { ResponseCache } from '../../../src/serving/response-cache.js';

const A = {};
const B = {};

function cache(capacityBytes: number): { cache: ResponseCache<string>; clock: { t: number } } {
  const clock = { t: 0 };
  return { cache: new ResponseCache<string>({ capacityBytes, clock: () => clock.t }), clock };
}

describe('ResponseCache', () => {
  it('answers a stored key and misses an unknown one, counting both', () => {
    const { cache: c } = cache(100);
    expect(c.lookup('k').value).toBeUndefined();
    expect(c.insert('k', 'answer', 10, A).stored).toBe(true);
    expect(c.lookup('k').value).toBe('answer');
    expect(c.summary()).toMatchObject({ entries: 1, lookups: 2, hits: 1, misses: 1, evictions: 0, utilization: 0.1 });
  });

  it('never holds more bytes than its capacity, evicting the least recently used first', () => {
    const { cache: c } = cache(30);
    c.insert('a', 'A', 10, A);
    c.insert('b', 'B', 10, A);
    c.insert('c', 'C', 10, A);
    c.lookup('a'); // a is now the most recently used: b is the oldest
    c.insert('d', 'D', 10, A);
    expect(c.lookup('b').value).toBeUndefined();
    expect(['a', 'c', 'd'].map((k) => c.lookup(k).value)).toEqual(['A', 'C', 'D']);
    // One large entry evicts as many as it needs, oldest first (after the lookups above: a, c, d).
    c.insert('e', 'E', 25, A);
    expect(['a', 'c', 'd', 'e'].map((k) => c.lookup(k).value)).toEqual([undefined, undefined, undefined, 'E']);
    expect(c.summary()).toMatchObject({ entries: 1, evictions: 4, utilization: 25 / 30 });
  });

  it('does not store an entry larger than the whole cache, and evicts nothing for it', () => {
    const { cache: c } = cache(30);
    c.insert('a', 'A', 10, A);
    expect(c.insert('big', 'BIG', 31, A).stored).toBe(false);
    expect(c.lookup('big').value).toBeUndefined();
    expect(c.lookup('a').value).toBe('A');
    expect(c.summary()).toMatchObject({ entries: 1, evictions: 0 });
    // Exactly the capacity fits (after evicting the rest).
    expect(c.insert('full', 'F', 30, A).stored).toBe(true);
    expect(c.summary()).toMatchObject({ entries: 1, utilization: 1 });
  });

  it('replaces an entry stored again under its key without counting its bytes twice', () => {
    const { cache: c } = cache(30);
    c.insert('a', 'first', 20, A);
    c.insert('a', 'second', 20, A);
    expect(c.lookup('a').value).toBe('second');
    expect(c.summary()).toMatchObject({ entries: 1, evictions: 0, utilization: 20 / 30 });
  });

  it("drops one owner's entries and keeps the others' (a model unloads)", () => {
    const { cache: c } = cache(100);
    c.insert('a1', 'x', 10, A);
    c.insert('b1', 'y', 10, B);
    c.insert('a2', 'z', 10, A);
    expect(c.drop(A)).toBe(2);
    expect(['a1', 'b1', 'a2'].map((k) => c.lookup(k).value)).toEqual([undefined, 'y', undefined]);
    expect(c.summary()).toMatchObject({ entries: 1, utilization: 0.1, evictions: 0 });
    // The bytes freed are usable again.
    c.insert('big', 'w', 90, A);
    expect(c.lookup('b1').value).toBe('y');
  });

  it('times lookups and insertions on its clock, in ns', () => {
    let t = 0;
    const steps = [0, 0.002, 0.01, 0.013]; // ms: lookup 2 µs, insertion 3 µs
    const c = new ResponseCache<string>({ capacityBytes: 10, clock: () => steps[t++]! });
    expect(c.lookup('k').ns).toBe(2000);
    expect(c.insert('k', 'v', 1, A).ns).toBe(3000);
    expect(c.summary()).toMatchObject({ lookupNs: 2000, insertionNs: 3000 });
  });
});
