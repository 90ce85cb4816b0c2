import { describe, expect, it, vi } from 'vitest';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { arrivalTimesMs, runLoad, sampleGamma, Slots } from '../../../bench/scenarios/serve/arrivals.js';

function moments(values: readonly number[]): { mean: number; cv: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length;
  return { mean, cv: Math.sqrt(variance) / mean };
}

describe('sampleGamma', () => {
  it('has mean shape × scale and coefficient of variation 1/√shape', () => {
    for (const shape of [0.5, 1, 4]) {
      const random = new SeededRandom(42);
      const { mean, cv } = moments(Array.from({ length: 40_000 }, () => sampleGamma(random, shape, 2)));
      expect(mean, `shape ${shape}`).toBeCloseTo(shape * 2, 1);
      expect(cv, `shape ${shape}`).toBeCloseTo(1 / Math.sqrt(shape), 1);
    }
  });

  it('rejects a non-positive shape or scale', () => {
    expect(() => sampleGamma(new SeededRandom(1), 0, 1)).toThrow(/shape and scale/);
  });
});

describe('arrivalTimesMs', () => {
  it('sends everything at t = 0 at an infinite rate', () => {
    expect(arrivalTimesMs(4, { requestRate: Infinity, burstiness: 1, seed: 0 })).toEqual([0, 0, 0, 0]);
  });

  it('rises, lands the last arrival at exactly N / rate, and repeats for a seed', () => {
    const shape = { requestRate: 4, burstiness: 1, seed: 7 };
    const times = arrivalTimesMs(20, shape);
    expect(times.at(-1)).toBeCloseTo(5000, 9);
    for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThan(times[i - 1]!);
    expect(times[0]!).toBeGreaterThan(0);
    expect(arrivalTimesMs(20, shape)).toEqual(times);
    expect(arrivalTimesMs(20, { ...shape, seed: 8 })).not.toEqual(times);
  });

  it('makes gaps more regular as burstiness grows', () => {
    const gaps = (burstiness: number): number[] => {
      const t = arrivalTimesMs(5000, { requestRate: 10, burstiness, seed: 3 });
      return t.map((x, i) => x - (i === 0 ? 0 : t[i - 1]!));
    };
    expect(moments(gaps(1)).cv).toBeCloseTo(1, 1);
    expect(moments(gaps(4)).cv).toBeCloseTo(0.5, 1);
    expect(moments(gaps(0.25)).cv).toBeCloseTo(2, 0);
  });
});

describe('Slots and runLoad', () => {
  it('serves waiters in arrival order', async () => {
    const slots = new Slots(1);
    const order: number[] = [];
    await slots.acquire();
    const waiters = [1, 2, 3].map(async (n) => {
      await slots.acquire();
      order.push(n);
      slots.release();
    });
    slots.release();
    await Promise.all(waiters);
    expect(order).toEqual([1, 2, 3]);
  });

  it('never has more than the cap in flight and returns outputs in request order', async () => {
    let inFlight = 0;
    let most = 0;
    const held: (() => void)[] = [];
    const load = runLoad(10, { requestRate: Infinity, burstiness: 1, maxConcurrency: 3, seed: 0 }, async (i) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise<void>((resolve) => held.push(resolve));
      inFlight -= 1;
      return i * 10;
    });
    // Each time the cap is full, the newest request finishes first, so they finish out of order.
    for (let finished = 0; finished < 10; finished++) {
      await vi.waitFor(() => expect(held).toHaveLength(Math.min(3, 10 - finished)));
      held.pop()!();
    }
    const result = await load;
    expect(most).toBe(3);
    expect(result.outputs).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    expect(result.durationMs).toBeGreaterThan(0);
  });

  it('sends on the arrival schedule at a finite rate', async () => {
    const sentAt: number[] = [];
    const started = performance.now();
    await runLoad(5, { requestRate: 100, burstiness: 1, maxConcurrency: Infinity, seed: 5 }, async () => void sentAt.push(performance.now() - started));
    const planned = arrivalTimesMs(5, { requestRate: 100, burstiness: 1, seed: 5 });
    sentAt.forEach((t, i) => expect(t).toBeGreaterThanOrEqual(planned[i]! - 2));
    expect(sentAt.at(-1)!).toBeGreaterThanOrEqual(48); // last arrival at 5 / 100 s
  });
});
