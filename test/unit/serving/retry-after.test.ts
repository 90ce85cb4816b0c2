// The retry-after policy: waits from the measured drain rate, a burst spread over booked slots,
// whole seconds ≥ 1 next to the milliseconds, and the SDKs' 60 s ceiling.
import { describe, expect, it } from 'vitest';
import { MAX_RETRY_MS, RetryAfterPolicy } from '../../../src/serving/retry-after.js';

function policy(random = () => 0.5, initialRate?: number): { policy: RetryAfterPolicy; clock: { t: number } } {
  const clock = { t: 1000 };
  return { policy: new RetryAfterPolicy({ now: () => clock.t, random, initialRate }), clock };
}

describe('RetryAfterPolicy', () => {
  it('measures the drain rate from first-token departures, per model', () => {
    const { policy: p, clock } = policy(undefined, 3);
    expect(p.drainRate('a')).toBe(3);
    for (let i = 0; i < 5; i++) {
      p.recordDrain('a');
      clock.t += 100;
    }
    expect(p.drainRate('a')).toBeCloseTo(10);
    p.recordDrain('b');
    expect(p.drainRate('b')).toBeCloseTo(10); // one departure is no rate: the last one measured stands
  });

  it('waits for the backlog ahead to drain, at the measured rate', () => {
    const { policy: p, clock } = policy(() => 0);
    for (let i = 0; i < 3; i++) {
      p.recordDrain('a');
      clock.t += 500; // 2 per second
    }
    // 4 waiting, limit 4, one more: one must drain → 500 ms.
    expect(p.advise('a', 4, 1, 4)).toEqual({ seconds: 1, ms: 500 });
    // a request of 3 choices behind 4 (limit 4): three must drain, after the slot booked above.
    expect(p.advise('a', 4, 3, 4)).toEqual({ seconds: 2, ms: 1500 });
  });

  it('books one slot per shed request, so a burst is told distinct, increasing waits', () => {
    const { policy: p } = policy(() => 0.5, 10);
    const waits = Array.from({ length: 20 }, () => p.advise('a', 2, 1, 2).ms);
    expect(new Set(waits).size).toBe(20);
    expect(waits).toEqual([...waits].sort((x, y) => x - y));
    expect(waits[0]).toBe(150); // slot [100, 200) ms, the middle
    expect(waits[19]).toBe(2050);
    // Another model's book is its own.
    expect(p.advise('b', 2, 1, 2).ms).toBe(150);
  });

  it('jitters inside the slot and forgets slots that have passed', () => {
    const { policy: p, clock } = policy(() => 0.99, 10);
    expect(p.advise('a', 2, 1, 2).ms).toBe(199);
    clock.t += 10_000;
    expect(p.advise('a', 2, 1, 2).ms).toBe(199);
  });

  it('says whole seconds ≥ 1 and never more than the SDKs accept', () => {
    const { policy: p } = policy(() => 0, 0.01);
    const first = p.advise('a', 1, 1, 1);
    expect(first).toEqual({ seconds: 60, ms: MAX_RETRY_MS });
    const fast = policy(() => 0, 1000).policy.advise('a', 1, 1, 1);
    expect(fast.seconds).toBe(1);
    expect(fast.ms).toBeGreaterThanOrEqual(1);
  });
});
