// Prompt logprobs (computed by the engine during prefill) in the two shapes completions returns
// them: OpenAI's echo + logprobs, where the prompt's tokens lead the choice's logprobs arrays
// (the first token has no logprob: null, as OpenAI and vLLM give it), and vLLM's
// `prompt_logprobs`, a list with one {token id: {logprob, rank, decoded_token}} map per prompt
// token (null first) holding the prompt token and its top alternatives.

import type { PromptTokenLogprob } from '../src/contracts/generate.js';
import type { CompletionLogprobs, TokenSpelling } from './logprobs.js';

// vLLM's stand-in for −∞: JSON has no infinity.
const FLOOR = -9999;
const finite = (logprob: number): number => (Number.isFinite(logprob) ? logprob : FLOOR);

export interface VllmLogprob {
  readonly logprob: number;
  readonly rank: number;
  readonly decoded_token: string;
}

export type VllmPromptLogprobs = (Record<string, VllmLogprob> | null)[];

/**
 * The echoed prompt as completions logprobs arrays: `topCount` alternatives per token, text
 * offsets from 0; returns the offset after the prompt for the completion's tokens.
 */
export function echoedPromptLogprobs(
  promptTokenIds: readonly number[],
  logprobs: readonly (PromptTokenLogprob | null)[],
  text: TokenSpelling,
  topCount: number,
): { logprobs: CompletionLogprobs; offset: number } {
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let at = 0;
  promptTokenIds.forEach((id, i) => {
    const lp = logprobs[i] ?? null;
    const token = text.text(id);
    out.tokens.push(token);
    out.token_logprobs.push(lp === null ? null : finite(lp.logprob));
    out.top_logprobs.push(lp === null ? null : Object.fromEntries(lp.top.slice(0, topCount).map((t) => [text.text(t.tokenId), finite(t.logprob)])));
    out.text_offset.push(at);
    at += token.length;
  });
  return { logprobs: out, offset: at };
}

/** vLLM's prompt_logprobs: the prompt token itself, then up to `topCount` alternatives, ranked. */
export function vllmPromptLogprobs(logprobs: readonly (PromptTokenLogprob | null)[], text: TokenSpelling, topCount: number): VllmPromptLogprobs {
  return logprobs.map((lp) => {
    if (lp === null) return null;
    const entries: Record<string, VllmLogprob> = { [lp.tokenId]: { logprob: finite(lp.logprob), rank: lp.rank, decoded_token: text.text(lp.tokenId) } };
    lp.top.slice(0, topCount).forEach((t, i) => {
      entries[t.tokenId] ??= { logprob: finite(t.logprob), rank: i + 1, decoded_token: text.text(t.tokenId) };
    });
    return entries;
  });
}
