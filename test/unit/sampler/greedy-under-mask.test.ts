// The shortcuts a greedy grammar row takes (step-constraints.ts) choose exactly what masking the
// row and taking its argmax would: the first candidate a mask allows is the masked argmax, and
// maskedArgmax (which reads only allowed ids) equals applyTokenMask then argmax. Checked on random
// rows with ties, −∞ and NaN, under masks from nearly empty to nearly full.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyTokenMask, maskedArgmax } from '../../../src/sampler/mask.js';
import { argmax } from '../../../src/sampler/select.js';
import { Sampler } from '../../../src/sampler/sampler.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const VOCAB = 200;

/** Logits drawn from few values (many ties), with some −∞ and NaN. */
const logitsArb = fc.array(fc.oneof({ weight: 8, arbitrary: fc.integer({ min: -4, max: 4 }) }, { weight: 1, arbitrary: fc.constant(-Infinity) }, { weight: 1, arbitrary: fc.constant(Number.NaN) }), {
  minLength: VOCAB,
  maxLength: VOCAB,
});

/** A bitmask over VOCAB ids allowing each with probability `density`, from a seed. */
const maskArb = fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: VOCAB, maxLength: VOCAB })).map(([density, draws]) => {
  const mask = new Int32Array(Math.ceil(VOCAB / 32));
  draws.forEach((draw, id) => {
    if (draw < density) mask[id >> 5]! |= 1 << (id & 31);
  });
  return mask;
});

const allows = (mask: Int32Array, id: number): boolean => ((mask[id >> 5]! >>> (id & 31)) & 1) === 1;

function maskedThenArgmax(row: Float32Array, mask: Int32Array, n: number): number {
  const copy = Float32Array.from(row);
  applyTokenMask(copy, mask);
  return argmax(copy, n);
}

describe('greedy under a grammar mask', () => {
  it('maskedArgmax equals masking the row then taking its argmax, and leaves the row as it was', () => {
    fc.assert(
      fc.property(logitsArb, maskArb, fc.integer({ min: 1, max: VOCAB }), (logits, mask, n) => {
        const row = Float32Array.from(logits);
        const before = Float32Array.from(row);
        expect(maskedArgmax(row, mask, n)).toBe(maskedThenArgmax(row, mask, n));
        expect(row).toEqual(before);
      }),
      { numRuns: 500 },
    );
  });

  it("the first candidate a mask allows is the masked argmax; the first candidate is the row's argmax", () => {
    const sampler = new Sampler({ vocabSize: VOCAB });
    fc.assert(
      fc.property(logitsArb, maskArb, fc.integer({ min: 1, max: 32 }), (logits, mask, count) => {
        const row = Float32Array.from(logits);
        const { tokenId, candidates } = sampler.sample({ requestId: 'r', logits: row, params: GREEDY_SAMPLING, promptTokenIds: [], outputTokenIds: [], bannedTokenIds: null, greedyCandidates: count });
        expect(candidates).toBeDefined();
        expect(tokenId).toBe(argmax(Float32Array.from(logits), VOCAB));
        if (candidates!.length > 0) expect(candidates![0]).toBe(tokenId);
        for (const id of candidates!) expect(row[id]).toBeGreaterThan(-Infinity);
        const taken = [...candidates!].find((id) => allows(mask, id));
        // No candidate allowed: the engine masks the row; one allowed: it is what the mask would choose.
        if (taken !== undefined) expect(taken).toBe(sampler.resampleGreedy(row, mask));
      }),
      { numRuns: 500 },
    );
  });

  it('applyTokenMask sets exactly the disallowed ids (and those past the mask) to −∞', () => {
    fc.assert(
      fc.property(logitsArb, maskArb, (logits, mask) => {
        const row = Float32Array.from([...logits, 1, 2, 3]);
        applyTokenMask(row, mask);
        row.forEach((x, id) => {
          if (id < VOCAB && allows(mask, id)) expect(Object.is(x, Math.fround(logits[id]!))).toBe(true);
          else expect(x).toBe(-Infinity);
        });
      }),
      { numRuns: 200 },
    );
  });
});
