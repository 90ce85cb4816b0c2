// One request's mutable record inside the engine, and the stop checks that need only token ids.
// The record's sequence is prompt + output so far; numComputedTokens chases its length, which is
// all that prefill, decode, prefix hits and recompute after preemption amount to.

import type { FinishReason, GenerateRequest, RequestSpecDecode, SequenceUpdate, TokenLogprob } from '../contracts/generate.js';

export type RequestStatus = 'waiting' | 'running' | 'finished';

export interface StopDecision {
  readonly reason: FinishReason;
  /** The EOS / stop token that ended it, or null for a length stop. */
  readonly stopTokenId: number | null;
}

export class RequestState {
  readonly id: string;
  /** Prompt followed by the output tokens so far. */
  readonly tokenIds: number[];
  readonly numPromptTokens: number;
  status: RequestStatus = 'waiting';
  /** Positions whose KV is in the cache. */
  numComputedTokens = 0;
  /** Prefix-cache hit at first admission, in tokens; later recomputes do not change it. */
  numCachedTokens = 0;
  numPreemptions = 0;
  /** True until the first plan after admission or preemption has named it. */
  isNew = true;
  scheduledTimeMs: number | null = null;
  firstTokenTimeMs: number | null = null;
  /** Order of admission to the engine (ties in arrival time keep submission order). */
  readonly sequence: number;
  /** Speculative decoding's checked proposals so far; null while it has proposed none. */
  private specDecode: RequestSpecDecode | null = null;

  constructor(
    readonly request: GenerateRequest,
    sequence: number,
    /** When the engine received the request, on the engine clock. */
    readonly arrivalTimeMs: number,
  ) {
    this.id = request.id;
    this.tokenIds = [...request.promptTokenIds];
    this.numPromptTokens = request.promptTokenIds.length;
    this.sequence = sequence;
  }

  get numTokens(): number {
    return this.tokenIds.length;
  }

  get numOutputTokens(): number {
    return this.tokenIds.length - this.numPromptTokens;
  }

  /** Counts a checked proposal of `numDrafts` tokens of which `numAccepted` held. */
  recordDraft(numDrafts: number, numAccepted: number): void {
    const so = this.specDecode ?? { numDrafts: 0, numDraftTokens: 0, numAcceptedTokens: 0 };
    this.specDecode = { numDrafts: so.numDrafts + 1, numDraftTokens: so.numDraftTokens + numDrafts, numAcceptedTokens: so.numAcceptedTokens + numAccepted };
  }

  /** The update reporting `newTokenIds` (already appended) and an optional finish. */
  toUpdate(newTokenIds: readonly number[], logprobs: readonly TokenLogprob[] | null, stop: StopDecision | null): SequenceUpdate {
    return {
      requestId: this.id,
      newTokenIds,
      logprobs,
      finishReason: stop?.reason ?? null,
      stopTokenId: stop?.stopTokenId ?? null,
      numPromptTokens: this.numPromptTokens,
      numOutputTokens: this.numOutputTokens,
      numCachedTokens: this.numCachedTokens,
      numPreemptions: this.numPreemptions,
      ...(this.specDecode ? { specDecode: this.specDecode } : {}),
      arrivalTimeMs: this.arrivalTimeMs,
      scheduledTimeMs: this.scheduledTimeMs,
      firstTokenTimeMs: this.firstTokenTimeMs,
    };
  }
}

/**
 * Whether the request ends with its latest token (already appended). The order follows vLLM:
 * min_tokens suppresses token stops, then EOS (unless ignore_eos), stop_token_ids, and length
 * (max_tokens or the context length).
 */
export function checkStop(state: RequestState, maxModelLen: number): StopDecision | null {
  const { stop } = state.request;
  const last = state.tokenIds[state.tokenIds.length - 1]!;
  const numOutput = state.numOutputTokens;
  if (numOutput >= stop.minTokens) {
    if (!stop.ignoreEos && stop.eosTokenIds.includes(last)) return { reason: 'stop', stopTokenId: last };
    if (stop.stopTokenIds.includes(last)) return { reason: 'stop', stopTokenId: last };
  }
  if (numOutput >= stop.maxTokens || state.numTokens >= maxModelLen) return { reason: 'length', stopTokenId: null };
  return null;
}
