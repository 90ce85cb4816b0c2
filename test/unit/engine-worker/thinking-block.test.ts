// thinkingDirective: what a row with a thinking block may sample next, as a pure function of the
// spec and its output. Checked case by case, then as a property: generating with the directive
// (free tokens drawn at random) always closes the block within budget + its closing length, and
// the answer starts right after the first closing sequence.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ThinkingSpec } from '../../../src/contracts/generate.js';
import { thinkingDirective } from '../../../src/engine-worker/thinking-block.js';

const OPEN = [7, 8];
const CLOSE = [9, 10];
const spec = (overrides: Partial<ThinkingSpec> = {}): ThinkingSpec => ({ endTokenIds: CLOSE, startsInside: true, startTokenIds: OPEN, budget: null, ...overrides });

describe('thinkingDirective', () => {
  it('inside a block from the prompt: free until the closing ids, then the answer after them', () => {
    expect(thinkingDirective(spec(), [], false)).toEqual({ kind: 'free' });
    expect(thinkingDirective(spec(), [1, 2, 9], false)).toEqual({ kind: 'free' });
    expect(thinkingDirective(spec(), [1, 2, 9, 10], false)).toEqual({ kind: 'answer', answerStart: 4, alsoAllow: null });
    expect(thinkingDirective(spec(), [1, 9, 10, 5, 9, 10], true)).toEqual({ kind: 'answer', answerStart: 3, alsoAllow: null });
  });

  it('a spent budget forces the closing ids one by one, continuing a closing the model began', () => {
    const budget = spec({ budget: 3 });
    expect(thinkingDirective(budget, [1, 2], false)).toEqual({ kind: 'free' });
    expect(thinkingDirective(budget, [1, 2, 3], false)).toEqual({ kind: 'force', tokenId: 9 });
    expect(thinkingDirective(budget, [1, 2, 3, 9], false)).toEqual({ kind: 'force', tokenId: 10 });
    expect(thinkingDirective(budget, [1, 2, 9], false)).toEqual({ kind: 'force', tokenId: 10 });
    expect(thinkingDirective(budget, [1, 2, 3, 9, 10], false)).toEqual({ kind: 'answer', answerStart: 5, alsoAllow: null });
    expect(thinkingDirective(spec({ budget: 0 }), [], true)).toEqual({ kind: 'force', tokenId: 9 });
  });

  it('a block the output must open: opened by the opening ids, absent otherwise', () => {
    const opens = spec({ startsInside: false, budget: 2 });
    expect(thinkingDirective(opens, [], false)).toEqual({ kind: 'free' });
    expect(thinkingDirective(opens, [7], false)).toEqual({ kind: 'force', tokenId: 8 });
    expect(thinkingDirective(opens, [7, 8], false)).toEqual({ kind: 'free' });
    expect(thinkingDirective(opens, [7, 8, 1, 2], false)).toEqual({ kind: 'force', tokenId: 9 });
    expect(thinkingDirective(opens, [5], false)).toEqual({ kind: 'answer', answerStart: 0, alsoAllow: null });
    expect(thinkingDirective(opens, [7, 5], true)).toEqual({ kind: 'answer', answerStart: 0, alsoAllow: null });
    // A constrained row starts with its grammar's first token or the opening.
    expect(thinkingDirective(opens, [], true)).toEqual({ kind: 'answer', answerStart: 0, alsoAllow: 7 });
  });

  it('property: following the directive, the block always closes within budget + closing length', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 12 }), fc.boolean(), fc.array(fc.integer({ min: 1, max: 10 }), { maxLength: 40 }), (budget, startsInside, draws) => {
        const s = spec({ budget, startsInside });
        const output: number[] = startsInside ? [] : [...OPEN];
        const start = output.length;
        let answerStart: number | null = null;
        for (let i = 0; i < budget + CLOSE.length + OPEN.length + 2 && answerStart === null; i++) {
          const d = thinkingDirective(s, output, false);
          if (d.kind === 'answer') answerStart = d.answerStart;
          else output.push(d.kind === 'force' ? d.tokenId : (draws[i % Math.max(1, draws.length)] ?? 1));
        }
        expect(answerStart).not.toBeNull();
        expect(answerStart! - start).toBeLessThanOrEqual(budget + CLOSE.length);
        // The answer starts right after the first closing sequence.
        const closedAt = answerStart! - CLOSE.length;
        expect(output.slice(closedAt, answerStart!)).toEqual(CLOSE);
        for (let at = start; at < closedAt; at++) expect(output.slice(at, at + CLOSE.length)).not.toEqual(CLOSE);
      }),
      { numRuns: 500 },
    );
  });
});
