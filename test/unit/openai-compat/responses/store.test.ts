// The responses store's policy, on an injected clock: a size bound that evicts the least recently
// written entry, a TTL from the last write that reads never extend, and deletes.
import { describe, expect, it } from 'vitest';
import { ExpiringStore } from '../../../../openai-compat/responses/store.js';

function storeWith(maxEntries: number, ttlMs: number) {
  const clock = { now: 0 };
  const store = new ExpiringStore<string>({ maxEntries, ttlMs, now: () => clock.now });
  return { store, clock };
}

describe('ExpiringStore', () => {
  it('evicts the least recently written entry past the bound; a rewrite makes an entry the newest', () => {
    const { store } = storeWith(2, 1000);
    store.set('a', 'A');
    store.set('b', 'B');
    store.set('a', 'A2');
    store.set('c', 'C');
    expect(store.get('b')).toBeUndefined();
    expect(store.get('a')).toBe('A2');
    expect(store.get('c')).toBe('C');
    expect(store.size).toBe(2);
    expect([...store.values()]).toEqual(['A2', 'C']);
  });

  it('forgets an entry once its TTL from the last write has passed, and reads do not extend it', () => {
    const { store, clock } = storeWith(10, 1000);
    store.set('a', 'A');
    clock.now = 600;
    store.set('b', 'B');
    clock.now = 999;
    expect(store.get('a')).toBe('A');
    clock.now = 1000;
    expect(store.get('a')).toBeUndefined();
    expect(store.get('b')).toBe('B');
    expect(store.size).toBe(1);
    clock.now = 1600;
    expect(store.size).toBe(0);
    expect([...store.values()]).toEqual([]);
  });

  it('deletes live entries only', () => {
    const { store, clock } = storeWith(10, 1000);
    store.set('a', 'A');
    expect(store.delete('a')).toBe(true);
    expect(store.delete('a')).toBe(false);
    store.set('b', 'B');
    clock.now = 5000;
    expect(store.delete('b')).toBe(false);
    expect(store.delete('never')).toBe(false);
  });

  it('refuses bounds that could hold nothing', () => {
    expect(() => new ExpiringStore({ maxEntries: 0, ttlMs: 1 })).toThrow(RangeError);
    expect(() => new ExpiringStore({ maxEntries: 1, ttlMs: 0 })).toThrow(RangeError);
  });
});
