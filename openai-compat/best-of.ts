// Completions' best_of (vLLM's semantics): best_of candidates are generated per prompt and the n
// with the highest cumulative logprob (the sum of their sampled tokens' logprobs) are returned,
// best first. Usage counts every candidate's tokens: they were all generated. As OpenAI, it
// cannot stream (the best are known only at the end).

import type { TokenLogprob } from '../src/contracts/generate.js';
import { invalidArg } from '../src/errors.js';
import type { Body } from '../src/server/kit/body.js';

/** Candidates per prompt: best_of, n when absent; ≥ n, and n itself when streaming. */
export function candidateCount(body: Body, n: number, stream: boolean): number {
  const value = body.best_of;
  if (value === undefined || value === null) return n;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw invalidArg(`best_of must be a positive integer, got ${JSON.stringify(value)}`, 'best_of');
  if (value < n) throw invalidArg(`best_of (${value}) must be greater than or equal to n (${n})`, 'best_of');
  if (stream && value > n) throw invalidArg('best_of cannot be used with stream (the best candidates are known only when all have finished)', 'best_of');
  return value;
}

/** Sum of the sampled tokens' logprobs. */
export function cumulativeLogprob(logprobs: readonly TokenLogprob[]): number {
  let sum = 0;
  for (const lp of logprobs) sum += lp.logprob;
  return sum;
}

/**
 * The candidates to return, in answer order: per prompt (candidates [g × perPrompt, (g + 1) ×
 * perPrompt)), the `n` with the highest score, best first (ties: the lower index).
 */
export function pickBest(scores: readonly number[], perPrompt: number, n: number): number[] {
  const chosen: number[] = [];
  for (let start = 0; start < scores.length; start += perPrompt) {
    const group = Array.from({ length: Math.min(perPrompt, scores.length - start) }, (_, i) => start + i);
    group.sort((a, b) => scores[b]! - scores[a]! || a - b);
    chosen.push(...group.slice(0, n));
  }
  return chosen;
}
