import { describe, expect, it } from 'vitest';
import { percentile, ratio, summarize } from '../../../bench/harness/stats.js';

describe('summarize', () => {
  it('matches hand-computed statistics on an odd sample count', () => {
    // sorted [1, 2, 3, 4, 10]; deviations from the mean 4: −3 −2 −1 0 6 → Σ² = 50
    const s = summarize([4, 1, 3, 10, 2]);
    expect(s.n).toBe(5);
    expect(s.mean).toBe(4);
    expect(s.median).toBe(3);
    expect(s.p90).toBeCloseTo(7.6, 12); // rank 3.6: 4 + 0.6 × (10 − 4)
    expect(s.p99).toBeCloseTo(9.76, 12); // rank 3.96: 4 + 0.96 × 6
    expect(s.min).toBe(1);
    expect(s.max).toBe(10);
    expect(s.stddev).toBeCloseTo(Math.sqrt(50 / 4), 12);
  });

  it('interpolates the median of an even sample count', () => {
    const s = summarize([10, 40, 20, 30]);
    expect(s.median).toBe(25);
    expect(s.p90).toBeCloseTo(37, 12); // rank 2.7: 30 + 0.7 × 10
    expect(s.stddev).toBeCloseTo(Math.sqrt(500 / 3), 12); // deviations ±5, ±15
  });

  it('gives zero spread for one sample and rejects none', () => {
    expect(summarize([7])).toEqual({ n: 1, mean: 7, median: 7, p90: 7, p99: 7, min: 7, max: 7, stddev: 0 });
    expect(() => summarize([])).toThrow(/no samples/);
  });

  it('does not reorder the caller’s samples', () => {
    const samples = [3, 1, 2];
    summarize(samples);
    expect(samples).toEqual([3, 1, 2]);
  });
});

describe('percentile and ratio', () => {
  it('hits the end points exactly', () => {
    expect(percentile([1, 5, 9], 0)).toBe(1);
    expect(percentile([1, 5, 9], 100)).toBe(9);
    expect(percentile([1, 5, 9], 75)).toBe(7);
    expect(() => percentile([1], 101)).toThrow();
  });

  it('has no ratio without a usable baseline', () => {
    expect(ratio(3, 2)).toBe(1.5);
    expect(ratio(3, undefined)).toBeUndefined();
    expect(ratio(3, 0)).toBeUndefined();
  });
});
