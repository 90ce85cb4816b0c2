import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { argmax, gatherNearMax, keepAtLeast, keepTopK, keepTopMass, topN } from '../../../src/sampler/select.js';
import { Candidates, keepTopKByBuckets, keepTopP, weigh } from '../../../src/sampler/draw.js';
import { NEGLIGIBLE_NATS, logSumExpNear } from '../../../src/sampler/exp-table.js';

const VOCAB = 151_936;

/** Deterministic Qwen3-sized rows: "flat" like a random-weight model, "peaked" like a trained one, "ties" quantized. */
function makeRow(shape: 'flat' | 'peaked' | 'ties', seed: number): Float32Array {
  let s = seed >>> 0;
  const next = (): number => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
  const row = new Float32Array(VOCAB);
  for (let i = 0; i < VOCAB; i++) {
    const g = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
    row[i] = shape === 'ties' ? Math.round(g * 4) / 4 : shape === 'flat' ? g : 2.5 * g;
  }
  if (shape === 'peaked') for (let j = 0; j < 20; j++) row[Math.floor(next() * VOCAB)] = 12 + 6 * next();
  return row;
}

/** Reference: token ids sorted by logit descending (ties by id), with softmax(row / T) masses. */
function reference(row: Float32Array, temperature: number): { order: number[]; mass: Float64Array } {
  const order = Array.from(row.keys()).sort((a, b) => row[b]! - row[a]! || a - b);
  const max = row[order[0]!]!;
  const mass = new Float64Array(row.length);
  for (let i = 0; i < row.length; i++) mass[i] = Math.exp((row[i]! - max) / temperature);
  return { order, mass };
}

const sorted = (ids: Int32Array, count: number): number[] => Array.from(ids.subarray(0, count)).sort((a, b) => a - b);

/** The candidate set within the negligible-mass window of the maximum, as the draw's gather leaves it. */
function candidates(row: Float32Array, temperature: number): Candidates {
  const c = new Candidates(VOCAB);
  const gathered = gatherNearMax(row, VOCAB, NEGLIGIBLE_NATS * temperature, c.ids, c.vals, c);
  c.count = keepAtLeast(c.ids, c.vals, gathered, c.max - NEGLIGIBLE_NATS * temperature);
  return c;
}

describe('selection kernels on a 151,936 vocabulary match a full sort', () => {
  for (const shape of ['flat', 'peaked', 'ties'] as const) {
    const row = makeRow(shape, shape.length * 17);
    const { order, mass } = reference(row, 1);

    it(`${shape}: argmax and top-N`, () => {
      expect(argmax(row, VOCAB)).toBe(order[0]);
      const ids = new Int32Array(20);
      const vals = new Float64Array(20);
      expect(topN(row, VOCAB, 20, ids, vals)).toBe(20);
      expect(Array.from(ids)).toEqual(order.slice(0, 20));
    });

    for (const k of [1, 50, 1000, 40_000]) {
      it(`${shape}: top_k ${k} keeps the k best plus ties`, () => {
        const kth = row[order[k - 1]!]!;
        const expected = order.filter((i) => row[i]! >= kth).sort((a, b) => a - b);
        const c = candidates(row, 1);
        keepTopKByBuckets(c, k, 1);
        expect(sorted(c.ids, c.count)).toEqual(expected);
        const d = candidates(row, 1);
        expect(sorted(d.ids, keepTopK(d.ids, d.vals, 0, d.count, k))).toEqual(expected);
      });
    }

    for (const p of [0.1, 0.5, 0.9, 0.99]) {
      it(`${shape}: top_p ${p} keeps the smallest prefix reaching p`, () => {
        let total = 0;
        for (const i of order) total += mass[i]!;
        const expected: number[] = [];
        let above = 0;
        for (const i of order) {
          if (above >= p * total) break;
          expected.push(i);
          above += mass[i]!;
        }
        const c = candidates(row, 1);
        weigh(c, 1, true);
        expect(c.total / total).toBeCloseTo(1, 7);
        keepTopP(c, p * c.total);
        const kept = c.count;
        // Ties at the boundary may be resolved differently; the count and every strictly better token agree.
        expect(kept).toBe(expected.length);
        const boundary = row[expected[expected.length - 1]!]!;
        const keptSet = new Set(c.ids.subarray(0, kept));
        for (const i of expected) if (row[i]! > boundary) expect(keptSet.has(i)).toBe(true);
        const weighed = candidates(row, 1);
        weigh(weighed, 1, false);
        expect(keepTopMass(weighed.ids, weighed.vals, 0, weighed.count, 0, p * c.total)).toBe(expected.length);
      });
    }

    it(`${shape}: log-sum-exp to float32 precision`, () => {
      const max = row[order[0]!]!;
      let sum = 0;
      for (let i = 0; i < VOCAB; i++) sum += Math.exp(row[i]! - max);
      expect(logSumExpNear(row, VOCAB, max)).toBeCloseTo(max + Math.log(sum), 7);
    });
  }
});

describe('argmax (four lanes)', () => {
  /** The one-chain definition the lanes must reproduce. */
  const reference = (row: Float32Array, n: number): number => {
    let [best, bestVal] = [0, -Infinity];
    for (let i = 0; i < n; i++) if (row[i]! > bestVal) [best, bestVal] = [i, row[i]!];
    return best;
  };

  it('equals the single-chain scan on short rows of ties, NaN and infinities, at every length', () => {
    const value = fc.constantFrom(0, 1, -1, 2, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5);
    fc.assert(
      fc.property(fc.array(value, { maxLength: 23 }), (values) => {
        const row = Float32Array.from(values);
        for (let n = 0; n <= row.length; n++) expect(argmax(row, n)).toBe(reference(row, n));
      }),
      { numRuns: 2000 },
    );
  });
});
