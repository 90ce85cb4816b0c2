// Which prefill rows share a model call: rows of similar shape merge, a chunk remainder with a
// long past never pads a fresh prompt (nor the other way round), long chunks run alone, and
// every row lands in exactly one call.
import { describe, expect, it } from 'vitest';
import { FLAT_CALL_COST, groupRows, MAX_MERGED_SCORES, paddedWork, RECTANGULAR_CALL_COST, scoresPerHead, type RowShape } from '../../../src/runners/call-groups.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';

const shapesOf = (groups: number[][], shapes: readonly RowShape[]) => groups.map((g) => g.map((i) => shapes[i]!));

describe('groupRows', () => {
  it('keeps short fresh prompts of one length in one call, in input order', () => {
    const shapes = Array.from({ length: 32 }, () => ({ past: 0, fresh: 128 }));
    expect(groupRows(shapes)).toEqual([shapes.map((_, i) => i)]);
  });

  it('runs a chunk remainder with a long past apart from a fresh prompt', () => {
    const groups = groupRows([
      { past: 2030, fresh: 18 },
      { past: 0, fresh: 512 },
    ]);
    expect(groups).toEqual([[1], [0]]);
  });

  it('runs long chunks alone, even when their shapes are equal: their scores would outgrow the limit', () => {
    const shapes = [
      { past: 0, fresh: 1024 },
      { past: 0, fresh: 1024 },
    ];
    expect(groupRows(shapes)).toEqual([[0], [1]]);
  });

  it('merges remainders of similar pasts, whose padding is cheaper than another call', () => {
    expect(
      groupRows([
        { past: 1000, fresh: 10 },
        { past: 990, fresh: 12 },
      ]),
    ).toEqual([[0, 1]]);
  });

  it('puts every row in exactly one call, no merged call over the scores limit, and never does more work than one call for all', () => {
    const random = new SeededRandom(5);
    for (let trial = 0; trial < 200; trial++) {
      const shapes = Array.from({ length: 1 + (random.nextUint32() % 12) }, () => ({ past: random.nextUint32() % 3000, fresh: 1 + (random.nextUint32() % 1500) }));
      const groups = groupRows(shapes);
      expect(groups.flat().sort((a, b) => a - b)).toEqual(shapes.map((_, i) => i));
      let split = 0;
      for (const group of shapesOf(groups, shapes)) {
        const fresh = Math.max(...group.map((s) => s.fresh));
        const past = Math.max(...group.map((s) => s.past));
        if (group.length > 1) expect(scoresPerHead(group.length, past, fresh)).toBeLessThanOrEqual(MAX_MERGED_SCORES);
        split += paddedWork(group.length, past, fresh);
      }
      const [past, fresh] = [Math.max(...shapes.map((s) => s.past)), Math.max(...shapes.map((s) => s.fresh))];
      if (scoresPerHead(shapes.length, past, fresh) <= MAX_MERGED_SCORES) expect(split).toBeLessThanOrEqual(paddedWork(shapes.length, past, fresh));
    }
  });
});

describe('groupRows with the flat (paged) call cost', () => {
  it('keeps decode rows and short prompts in one call: only attention pads', () => {
    const shapes = [...Array.from({ length: 31 }, (_, i) => ({ past: 100 + i * 7, fresh: 1 })), { past: 0, fresh: 24 }];
    expect(groupRows(shapes, FLAT_CALL_COST)).toEqual([shapes.map((_, i) => i)]);
  });

  it('merges chunks of different lengths that a rectangular call would pad', () => {
    const shapes = [
      { past: 0, fresh: 64 },
      { past: 0, fresh: 8 },
      { past: 0, fresh: 40 },
    ];
    expect(groupRows(shapes, RECTANGULAR_CALL_COST)).not.toEqual([[0, 1, 2]]);
    expect(groupRows(shapes, FLAT_CALL_COST)).toEqual([[0, 1, 2]]);
  });

  it('still runs a long chunk apart from decode rows whose queries it would pad', () => {
    const shapes = [...Array.from({ length: 16 }, () => ({ past: 2000, fresh: 1 })), { past: 0, fresh: 512 }];
    const groups = groupRows(shapes, FLAT_CALL_COST);
    expect(groups.find((g) => g.includes(16))).toEqual([16]);
  });
});
