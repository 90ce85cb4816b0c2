// The parts of a Messages answer around its content: the message id, stop_reason and
// stop_sequence from the engine's finish, and usage in Anthropic's terms (input_tokens counts
// only what was not read from the prefix cache; cache_read_input_tokens the rest, so the three
// input counters add up to the prompt, as Anthropic's do).

import { randomBytes } from 'node:crypto';
import type { FinishReason } from '../src/contracts/generate.js';
import type { Usage } from '../src/contracts/text-generation.js';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export interface MessagesUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_creation_input_tokens: number;
  readonly cache_read_input_tokens: number;
  /** Only for a model with a reasoning parser: the output tokens inside the thinking block. */
  readonly output_tokens_details?: { readonly thinking_tokens: number };
}

export function newMessageId(): string {
  return `msg_${randomBytes(12).toString('hex')}`;
}

export function newRequestId(): string {
  return `req_${randomBytes(12).toString('hex')}`;
}

export function messagesUsage(usage: Usage): MessagesUsage {
  return {
    input_tokens: usage.promptTokens - usage.cachedTokens,
    output_tokens: usage.completionTokens,
    // Prefix caching fills blocks as a side effect; nothing is written on a client's request the way Anthropic's cache_control writes.
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: usage.cachedTokens,
    ...(usage.reasoningTokens === undefined ? {} : { output_tokens_details: { thinking_tokens: usage.reasoningTokens } }),
  };
}

export interface Stop {
  readonly stop_reason: StopReason;
  readonly stop_sequence: string | null;
}

/** How the generation ended, in Anthropic's words: a matched stop string is a stop_sequence; calls made turn a natural end into tool_use. */
export function stopOf(reason: FinishReason | null, stopReason: string | number | null, stopSequences: readonly string[], calls: number): Stop {
  if (reason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (typeof stopReason === 'string' && stopSequences.includes(stopReason)) return { stop_reason: 'stop_sequence', stop_sequence: stopReason };
  return { stop_reason: calls > 0 ? 'tool_use' : 'end_turn', stop_sequence: null };
}
