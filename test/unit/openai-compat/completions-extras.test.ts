// The pure parts of completions' best_of and suffix: the candidate count and its refusals, the
// ranking, and the FIM style read from a vocabulary.
import { describe, expect, it } from 'vitest';
import { candidateCount, cumulativeLogprob, pickBest } from '../../../openai-compat/best-of.js';
import { FIM_STYLES, fimPrompt, fimTokensOf, requestedSuffix, requireFim } from '../../../openai-compat/fim.js';

const param = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (error) {
    return (error as { param?: string }).param;
  }
  return undefined;
};

describe('best_of', () => {
  it('counts candidates: best_of, or n when absent; refuses below n, with stream, and non-integers', () => {
    expect(candidateCount({}, 3, false)).toBe(3);
    expect(candidateCount({ best_of: null }, 2, true)).toBe(2);
    expect(candidateCount({ best_of: 5 }, 2, false)).toBe(5);
    expect(candidateCount({ best_of: 2 }, 2, true)).toBe(2);
    for (const [body, n, stream] of [
      [{ best_of: 1 }, 2, false],
      [{ best_of: 3 }, 2, true],
      [{ best_of: 0 }, 1, false],
      [{ best_of: '2' }, 1, false],
      [{ best_of: 2.5 }, 1, false],
    ] as const) {
      expect(param(() => candidateCount(body, n, stream))).toBe('best_of');
    }
  });

  it('picks the n highest cumulative logprobs of each prompt, best first, ties to the lower index', () => {
    expect(
      cumulativeLogprob([
        { tokenId: 1, logprob: -1, top: [] },
        { tokenId: 2, logprob: -0.5, top: [] },
      ]),
    ).toBe(-1.5);
    expect(pickBest([-3, -1, -2, -1], 4, 2)).toEqual([1, 3]);
    // Two prompts of three candidates each.
    expect(pickBest([-5, -1, -3, -0.1, -9, -0.2], 3, 1)).toEqual([1, 3]);
    expect(pickBest([-1, -2], 2, 2)).toEqual([0, 1]);
  });
});

describe('suffix', () => {
  it('finds the FIM style whose three tokens the vocabulary has', () => {
    const qwen = new Set(['<|fim_prefix|>', '<|fim_suffix|>', '<|fim_middle|>']);
    expect(fimTokensOf((t) => qwen.has(t))).toBe(FIM_STYLES[0]);
    const starcoder = new Set(['<fim_prefix>', '<fim_suffix>', '<fim_middle>']);
    expect(fimTokensOf((t) => starcoder.has(t))).toBe(FIM_STYLES[1]);
    expect(fimTokensOf((t) => t === '<|fim_prefix|>')).toBeNull();
    expect(fimPrompt(FIM_STYLES[0]!, 'a(', ')')).toBe('<|fim_prefix|>a(<|fim_suffix|>)<|fim_middle|>');
  });

  it('refuses a model without FIM tokens and a non-string suffix, naming suffix; an empty suffix is none', () => {
    expect(() => requireFim('m', () => false)).toThrow("model 'm' has no fill-in-the-middle tokens");
    expect(param(() => requireFim('m', () => false))).toBe('suffix');
    expect(requestedSuffix('')).toBeNull();
    expect(requestedSuffix(undefined)).toBeNull();
    expect(requestedSuffix('x')).toBe('x');
    expect(param(() => requestedSuffix(3))).toBe('suffix');
  });
});
