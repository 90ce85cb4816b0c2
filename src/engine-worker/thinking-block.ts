// Where a row stands in its thinking block (GenerateRequest.thinking), as a pure function of the
// spec and the output so far — recomputed each step, so preemption, recompute and prefix hits
// need no state to rebuild. The answer is what the sampler must do with the next token:
//   free    — the row is thinking: no constraint (the grammar waits for the answer);
//   force   — the budget is spent (or the opening has begun): only `tokenId` may come next;
//   answer  — the grammar, if any, applies to output[answerStart..]; `alsoAllow` is the block's
//             first opening id at output position 0 of a constrained row that may still open it.

import type { ThinkingSpec } from '../contracts/generate.js';

export type ThinkingDirective =
  | { readonly kind: 'free' }
  | { readonly kind: 'force'; readonly tokenId: number }
  | { readonly kind: 'answer'; readonly answerStart: number; readonly alsoAllow: number | null };

const ANSWER_FROM_START: ThinkingDirective = { kind: 'answer', answerStart: 0, alsoAllow: null };

/** True when `ids` occurs in `output` at `at`. */
function occursAt(output: ArrayLike<number>, ids: readonly number[], at: number): boolean {
  if (at + ids.length > output.length) return false;
  for (let i = 0; i < ids.length; i++) if (output[at + i] !== ids[i]) return false;
  return true;
}

/** Where the block's content starts in the output, or null when the output has no block. Undefined: not decided yet (the opening is under way). */
function blockStart(spec: ThinkingSpec, output: ArrayLike<number>): number | null | undefined {
  if (spec.startsInside) return 0;
  const open = spec.startTokenIds;
  if (open.length === 0) return null;
  for (let i = 0; i < Math.min(open.length, output.length); i++) if (output[i] !== open[i]) return null;
  return output.length >= open.length ? open.length : undefined;
}

/** The length of the longest suffix of output[from..] that is a proper prefix of `ids`. */
function partialSuffix(output: ArrayLike<number>, from: number, ids: readonly number[]): number {
  for (let k = Math.min(ids.length - 1, output.length - from); k > 0; k--) if (occursAt(output, ids.slice(0, k), output.length - k)) return k;
  return 0;
}

/**
 * What the next token of a row with a thinking block may be. `constrained`: the row has a
 * grammar, which then decides the first token unless it opens the block.
 */
export function thinkingDirective(spec: ThinkingSpec, output: ArrayLike<number>, constrained: boolean): ThinkingDirective {
  const start = blockStart(spec, output);
  if (start === null) return ANSWER_FROM_START;
  if (start === undefined) {
    // Nothing yet: a free row may open the block; a constrained one chooses between the opening and its grammar.
    if (output.length === 0) return constrained ? { kind: 'answer', answerStart: 0, alsoAllow: spec.startTokenIds[0]! } : { kind: 'free' };
    return { kind: 'force', tokenId: spec.startTokenIds[output.length]! };
  }
  const end = spec.endTokenIds;
  for (let at = start; at + end.length <= output.length; at++) if (occursAt(output, end, at)) return { kind: 'answer', answerStart: at + end.length, alsoAllow: null };
  const closing = partialSuffix(output, start, end);
  const thought = output.length - start;
  if (spec.budget !== null && thought >= spec.budget) return { kind: 'force', tokenId: end[closing]! };
  return { kind: 'free' };
}
