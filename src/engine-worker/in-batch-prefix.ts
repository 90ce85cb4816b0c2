// When a waiting prompt should wait one step for a block another request is computing now: the
// same prompt submitted twice at once (n choices, a client's retries). A block is shared only once
// computed (kv-cache-manager.ts), so admitted in the same step the prompt would compute that block
// again; one step later it finds it in the prefix cache. SGLang defers such in-batch prefixes too.
// Pure: the scheduler asks with the step's chunks so far.

import type { RequestState } from './request-state.js';
import type { Draft } from './spec-decode.js';

/** A request scheduled this step and how many of its positions the step computes. */
export interface ScheduledChunk {
  readonly state: RequestState;
  /** Tokens fed this step, proposals included. */
  readonly numNew: number;
  /** Speculative decoding's proposal, fed after the request's last token (the chunk's last numNew − 1 tokens); absent: none. */
  readonly draft?: Draft;
}

/**
 * True when a chunk of this step computes the full block of `state`'s prompt that starts at
 * `cachedTokens` (what the prefix cache holds of it now). Only a cacheable block counts: full,
 * and short of the prompt's last token (whose logits the request needs computed).
 */
export function computedByAnotherThisStep(state: RequestState, cachedTokens: number, blockSize: number, chunks: readonly ScheduledChunk[]): boolean {
  const blockEnd = cachedTokens + blockSize;
  if (blockEnd >= state.numTokens) return false;
  const tokens = state.tokenIds;
  return chunks.some(({ state: other, numNew }) => {
    if (other.request.cacheSalt !== state.request.cacheSalt || other.numComputedTokens > cachedTokens || other.numComputedTokens + numNew < blockEnd) return false;
    for (let i = 0; i < blockEnd; i++) if (other.tokenIds[i] !== tokens[i]) return false;
    return true;
  });
}
