// The speculation back-off: a row tries every token while its tries succeed; each refusal pauses
// it for a doubling number of tokens (capped); one success resets it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { afterTry, FRESH_SPECULATION, MAX_BACKOFF_TOKENS, shouldTry, type SpeculationState } from '../../../src/engine-worker/speculation.js';

describe('speculation back-off', () => {
  it('pauses 1, 2, 4 … tokens after consecutive refusals, and resets on a success', () => {
    let state = FRESH_SPECULATION;
    const tried: number[] = [];
    for (let position = 0; position < 40; position++) {
      if (!shouldTry(state, position)) continue;
      tried.push(position);
      state = afterTry(state, position, false);
    }
    expect(tried).toEqual([0, 2, 5, 10, 19, 36]);
    expect(afterTry(state, 36, true)).toEqual(FRESH_SPECULATION);
  });

  it('property: the pause never exceeds the cap, and a row that is always accepted tries every token', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 300 }), (outcomes) => {
        let state: SpeculationState = FRESH_SPECULATION;
        let position = 0;
        for (const accepted of outcomes) {
          while (!shouldTry(state, position)) position++;
          const next = afterTry(state, position, accepted);
          expect(next.backoff).toBeLessThanOrEqual(MAX_BACKOFF_TOKENS);
          expect(next.resumeAt - position - 1).toBeLessThanOrEqual(MAX_BACKOFF_TOKENS);
          if (accepted) expect(shouldTry(next, position + 1)).toBe(true);
          state = next;
          position++;
        }
      }),
    );
  });
});
