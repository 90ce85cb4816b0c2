// The `response` object of the Responses API, in OpenAI's field order: the identity (resp_ id,
// created_at, the model as named), the lifecycle (status, completed_at, error,
// incomplete_details), the request's settings echoed back, the output items and the usage —
// input tokens with prefix-cache hits as cached_tokens, output tokens with the thinking part as
// reasoning_tokens.

import type { Usage } from '../../src/contracts/text-generation.js';
import type { WireObject } from './output-events.js';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

export interface ResponseIdentity {
  readonly id: string;
  readonly createdAt: number;
  readonly model: string;
}

export interface ResponseState {
  readonly status: ResponseStatus;
  readonly output: readonly WireObject[];
  readonly usage: WireObject | null;
  readonly error?: { readonly code: string; readonly message: string } | null;
}

/** Reasoning tokens are the output processor's count on token ids (0 for a model without a reasoning parser). */
export function wireUsage(usage: Usage): WireObject {
  return {
    input_tokens: usage.promptTokens,
    input_tokens_details: { cached_tokens: usage.cachedTokens },
    output_tokens: usage.completionTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

export function responseObject(identity: ResponseIdentity, echo: Readonly<Record<string, unknown>>, state: ResponseState): WireObject {
  const { background, instructions, max_output_tokens, metadata, parallel_tool_calls, previous_response_id, reasoning, store, temperature, text, tool_choice, tools, top_p, truncation, user } = echo;
  const finished = state.status !== 'in_progress' && state.status !== 'queued';
  return {
    id: identity.id,
    object: 'response',
    created_at: identity.createdAt,
    status: state.status,
    background,
    completed_at: state.status === 'completed' ? nowSeconds() : null,
    error: state.error ?? null,
    // A length stop is the only way this server leaves a response incomplete.
    incomplete_details: state.status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions,
    max_output_tokens,
    max_tool_calls: null,
    model: identity.model,
    output: state.output,
    parallel_tool_calls,
    previous_response_id,
    reasoning,
    service_tier: 'default',
    store,
    temperature,
    text,
    tool_choice,
    tools,
    top_logprobs: 0,
    top_p,
    truncation,
    usage: finished ? state.usage : null,
    user,
    metadata,
  };
}
