// When a greedy grammar row should try its unmasked token before any mask (step-constraints.ts).
// A try that the grammar refuses costs a round trip to the grammar worker after the forward pass
// plus the mask it was meant to skip, computed then rather than during the pass; so a row whose
// tries keep failing (a model that does not follow the grammar by itself — the random-weight test
// models, or a weak model on an unfamiliar schema) backs off to masks first, doubling its pause
// after each refusal, while a row whose tries succeed keeps trying every token.

/** Longest pause, in tokens, between tries of a row whose tries fail. */
export const MAX_BACKOFF_TOKENS = 64;

export interface SpeculationState {
  /** Output position from which the row tries again. */
  readonly resumeAt: number;
  /** The pause after the next refusal, tokens. */
  readonly backoff: number;
}

export const FRESH_SPECULATION: SpeculationState = { resumeAt: 0, backoff: 1 };

/** Whether the row's token at output position `position` is tried unmasked. */
export const shouldTry = (state: SpeculationState, position: number): boolean => position >= state.resumeAt;

/** The state after a try at `position`: a success resets the pause, a refusal pauses and doubles it. */
export function afterTry(state: SpeculationState, position: number, accepted: boolean): SpeculationState {
  if (accepted) return FRESH_SPECULATION;
  return { resumeAt: position + 1 + state.backoff, backoff: Math.min(state.backoff * 2, MAX_BACKOFF_TOKENS) };
}
