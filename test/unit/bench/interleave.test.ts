import { describe, expect, it } from 'vitest';
import { estimateRemainingMs, interleavedSchedule } from '../../../bench/harness/interleave.js';
import { runInterleaved } from '../../../bench/harness/runner.js';
import type { BenchCase } from '../../../bench/harness/types.js';

describe('interleavedSchedule', () => {
  it('takes turns: warm-up rounds first, then measured rounds of every case once, the first in order', () => {
    const slots = interleavedSchedule(3, 2, 1);
    expect(
      slots
        .slice(0, 6)
        .map((s) => `${'ABC'[s.caseIndex]}${s.warmup ? 'w' : s.rep}`)
        .join(' '),
    ).toBe('Aw Bw Cw A0 B0 C0');
    expect(
      slots
        .slice(6)
        .map((s) => 'ABC'[s.caseIndex])
        .sort()
        .join(''),
    ).toBe('ABC');
    expect(interleavedSchedule(3, 2, 1)).toEqual(slots); // seeded: the same every run
  });

  it('varies which case runs before which from round to round', () => {
    const cases = 6;
    const slots = interleavedSchedule(cases, 12, 0);
    const before = Array.from({ length: cases }, () => new Set<number>());
    for (let i = 1; i < slots.length; i++) before[slots[i]!.caseIndex]!.add(slots[i - 1]!.caseIndex);
    for (let rep = 0; rep < 12; rep++) {
      expect(
        slots
          .filter((s) => s.rep === rep)
          .map((s) => s.caseIndex)
          .sort(),
      ).toEqual([0, 1, 2, 3, 4, 5]);
    }
    for (const seen of before) expect(seen.size).toBeGreaterThanOrEqual(3);
  });

  it('is empty without cases and has no warm-up when asked for none', () => {
    expect(interleavedSchedule(0, 5, 2)).toEqual([]);
    expect(interleavedSchedule(2, 1, 0).every((s) => !s.warmup)).toBe(true);
  });

  it('estimates time left from each case’s mean, unseen cases at the mean of the seen ones', () => {
    const slots = interleavedSchedule(3, 2, 0); // A B C A B C
    expect(estimateRemainingMs(slots, 0, new Map())).toBeUndefined();
    // A = 10, B = 30, C unseen → 20
    expect(
      estimateRemainingMs(
        slots,
        2,
        new Map([
          [0, 10],
          [1, 30],
        ]),
      ),
    ).toBe(20 + 10 + 30 + 20);
  });
});

function fakeCase(name: string, calls: string[], fail = false): BenchCase {
  return {
    group: 'g',
    variant: name,
    point: 'p',
    params: {},
    run: () => {
      calls.push(name);
      if (fail && calls.filter((c) => c === name).length === 2) throw new Error('boom');
    },
  };
}

describe('runInterleaved', () => {
  it('runs cases round-robin and keeps only measured samples', async () => {
    const calls: string[] = [];
    let clock = 0;
    const now = (): number => (clock += 5);
    const outcome = await runInterleaved([fakeCase('A', calls), fakeCase('B', calls)], { reps: 3, warmup: 2, now });
    // Warm-up and the first measured round in order; later rounds each case once, in their own order.
    expect(calls.slice(0, 6).join('')).toBe('ABABAB');
    for (const round of [calls.slice(6, 8), calls.slice(8, 10)]) expect([...round].sort().join('')).toBe('AB');
    expect(outcome.samplesMs.get(0)).toEqual([5, 5, 5]);
    expect(outcome.samplesMs.get(1)).toHaveLength(3);
    expect(outcome.failed).toEqual([]);
  });

  it('drops a case that throws and reports why, without stopping the others', async () => {
    const calls: string[] = [];
    const outcome = await runInterleaved([fakeCase('A', calls), fakeCase('B', calls, true)], { reps: 3, warmup: 1 });
    expect(calls.join('')).toBe('ABABAA');
    expect(outcome.samplesMs.get(0)).toHaveLength(3);
    expect(outcome.samplesMs.has(1)).toBe(false);
    expect(outcome.failed).toEqual([{ group: 'g', variant: 'B', point: 'p', reason: 'failed in rep 1: boom' }]);
  });
});
