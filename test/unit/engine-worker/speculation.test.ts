// The speculation back-off: a row tries every token while its tries hit or miss cheaply; each
// costly miss pauses it for a doubling number of tokens (capped); one hit resets it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { afterTry, CHEAP_MISS_MS, FRESH_SPECULATION, MAX_BACKOFF_TOKENS, shouldTry, type SpeculationState, type TryVerdict } from '../../../src/engine-worker/speculation.js';

const HIT: TryVerdict = { hit: true };
const COSTLY_MISS: TryVerdict = { hit: false, ms: CHEAP_MISS_MS * 5 };
const CHEAP_MISS: TryVerdict = { hit: false, ms: CHEAP_MISS_MS / 10 };

describe('speculation back-off', () => {
  it('pauses 1, 2, 4 … tokens after consecutive costly misses, and resets on a hit', () => {
    let state = FRESH_SPECULATION;
    const tried: number[] = [];
    for (let position = 0; position < 40; position++) {
      if (!shouldTry(state, position)) continue;
      tried.push(position);
      state = afterTry(state, position, COSTLY_MISS);
    }
    expect(tried).toEqual([0, 2, 5, 10, 19, 36]);
    expect(afterTry(state, 36, HIT)).toEqual(FRESH_SPECULATION);
  });

  it('a cheap miss (few tokens allowed, so the mask after it is cheap) never pauses the row', () => {
    let state = FRESH_SPECULATION;
    for (let position = 0; position < 100; position++) {
      expect(shouldTry(state, position)).toBe(true);
      state = afterTry(state, position, CHEAP_MISS);
    }
    // …and leaves a paused row's pause as it was.
    const paused = afterTry(FRESH_SPECULATION, 3, COSTLY_MISS);
    expect(afterTry(paused, 4, CHEAP_MISS)).toEqual(paused);
  });

  it('property: the pause never exceeds the cap, and after a hit or a cheap miss the next token is tried', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(HIT, COSTLY_MISS, CHEAP_MISS), { minLength: 1, maxLength: 300 }), (outcomes) => {
        let state: SpeculationState = FRESH_SPECULATION;
        let position = 0;
        for (const verdict of outcomes) {
          while (!shouldTry(state, position)) position++;
          const next = afterTry(state, position, verdict);
          expect(next.backoff).toBeLessThanOrEqual(MAX_BACKOFF_TOKENS);
          expect(next.resumeAt - position - 1).toBeLessThanOrEqual(MAX_BACKOFF_TOKENS);
          if (verdict.hit || verdict.ms <= CHEAP_MISS_MS) expect(shouldTry(next, position + 1)).toBe(true);
          state = next;
          position++;
        }
      }),
    );
  });
});
