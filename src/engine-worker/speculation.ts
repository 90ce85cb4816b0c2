// When a greedy grammar row should try its unmasked candidates before any mask
// (step-constraints.ts). A try that finds no allowed candidate costs a round trip to the grammar
// worker after the forward pass plus the mask it was meant to skip, computed then rather than
// during the pass. That is cheap where the grammar allows few tokens (a structural position: the
// mask takes microseconds), which is also where a model that does not follow its grammar misses;
// so a cheap miss keeps the row trying. Only a costly miss — the row's time on the worker above
// CHEAP_MISS_MS — backs it off to masks first, doubling its pause after each, so a grammar whose
// every mask is slow keeps that work overlapped with the forward pass.

/** Longest pause, in tokens, between tries of a row whose tries miss at a cost. */
export const MAX_BACKOFF_TOKENS = 64;

/** A miss up to this much worker time (candidates tried, then the mask) does not pause the row's tries, ms. */
export const CHEAP_MISS_MS = 1;

export interface SpeculationState {
  /** Output position from which the row tries again. */
  readonly resumeAt: number;
  /** The pause after the next costly miss, tokens. */
  readonly backoff: number;
}

export const FRESH_SPECULATION: SpeculationState = { resumeAt: 0, backoff: 1 };

/** How a try went: a candidate was taken, or none was and the row cost the worker `ms`. */
export type TryVerdict = { readonly hit: true } | { readonly hit: false; readonly ms: number };

/** Whether the row's token at output position `position` is tried unmasked. */
export const shouldTry = (state: SpeculationState, position: number): boolean => position >= state.resumeAt;

/** The state after a try at `position`: a hit resets the pause, a costly miss pauses and doubles it, a cheap miss changes nothing. */
export function afterTry(state: SpeculationState, position: number, verdict: TryVerdict): SpeculationState {
  if (verdict.hit) return FRESH_SPECULATION;
  if (verdict.ms <= CHEAP_MISS_MS) return state;
  return { resumeAt: position + 1 + state.backoff, backoff: Math.min(state.backoff * 2, MAX_BACKOFF_TOKENS) };
}
