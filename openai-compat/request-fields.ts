// The request fields the OpenAI routes accept, refuse and ignore. Every top-level field is one
// of: translated (sampling, prompt, streaming), an accepted no-op whose absence of effect is
// correct (`user`, `metadata`: labels this server has no use for), or refused with a 400 that
// names it, either because it asks for behaviour this server lacks (audio, legacy functions) or
// because nobody defines it. Nothing changes output while being silently dropped. The
// structured-output fields (response_format, structured_outputs, guided_*) are declared in
// src/vocabulary; chat's tools, tool_choice and parallel_tool_calls are checked in
// src/vocabulary/tools.ts and planned by src/server/kit/tool-plan.ts.

import { invalidArg } from '../src/errors.js';
import { wireFieldNames, type WireVocabulary } from '../src/vocabulary/index.js';
import { checkFields as checkBodyFields, type Body } from '../src/server/kit/body.js';
import { unknownParameter, unsupportedParameter } from './errors.js';

/** Most choices (n × prompts) one request may fan out into. */
export const MAX_CHOICES = 128;

/** The generation parameters (src/vocabulary) under chat's names: OpenAI's newer name for max_tokens wins when both are sent. */
/** vLLM's thinking_token_budget is max_thinking_tokens; prompt logprobs are a completions feature. */
export const CHAT_VOCABULARY: WireVocabulary = { omit: ['prompt_logprobs'], aliases: { max_completion_tokens: 'max_tokens', thinking_token_budget: 'max_thinking_tokens' } };
/**
 * Completions' logprobs is the number of alternatives itself; there is no top_logprobs. Their
 * output is raw text, never split into reasoning, so they take no reasoning fields either.
 */
export const COMPLETION_VOCABULARY: WireVocabulary = { omit: ['top_logprobs', 'reasoning_effort', 'max_thinking_tokens'] };

/** Fields that label a request without changing its output; accepted and deliberately unused. */
const NO_OP_FIELDS = ['user', 'metadata', 'safety_identifier', 'prompt_cache_key', 'request_id'];

/** Chat's tool fields (src/vocabulary/tools.ts); completions have none. */
const TOOL_FIELDS = ['tools', 'tool_choice', 'parallel_tool_calls'];

/** Ollama's keep_alive: how long the model stays loaded after this request (read by src/server/kit/model-leases.ts). */
export const KEEP_ALIVE_FIELD = 'keep_alive';

const COMMON_FIELDS = ['model', 'n', 'stream', 'stream_options', KEEP_ALIVE_FIELD, 'return_tokens_as_token_ids', ...NO_OP_FIELDS];

export const CHAT_FIELDS = new Set([...COMMON_FIELDS, ...wireFieldNames(CHAT_VOCABULARY), 'messages', 'chat_template_kwargs', 'add_generation_prompt', ...TOOL_FIELDS]);
export const COMPLETION_FIELDS = new Set([...COMMON_FIELDS, ...wireFieldNames(COMPLETION_VOCABULARY), 'prompt', 'echo', 'add_special_tokens', 'best_of', 'suffix']);

const isEmptyList = (v: unknown): boolean => Array.isArray(v) && v.length === 0;

/**
 * Defined fields this server refuses, each with the test for a value that would need the
 * missing feature; null / undefined always pass, as do values that ask for the default.
 */
const UNSUPPORTED: Readonly<Record<string, (value: unknown) => boolean>> = {
  // The legacy functions API; tools replaced it.
  functions: (v) => !isEmptyList(v),
  function_call: (v) => v !== 'none' && v !== 'auto',
  audio: () => true,
  modalities: (v) => !(Array.isArray(v) && v.every((m) => m === 'text')),
  prediction: () => true,
  web_search_options: () => true,
  // Completions only: chat carries it (a declared field), completions' raw text is never read for reasoning.
  reasoning_effort: () => true,
  verbosity: () => true,
  store: (v) => v !== false,
  service_tier: (v) => v !== 'auto' && v !== 'default',
  best_of: () => true,
  suffix: (v) => v !== '',
  prompt_logprobs: () => true,
  continue_final_message: (v) => v !== false,
  chat_template: () => true,
  documents: () => true,
  allowed_token_ids: () => true,
  bad_words: (v) => !isEmptyList(v),
  truncate_prompt_tokens: () => true,
  use_beam_search: (v) => v !== false,
  echo: () => true, // chat only: completions list echo as a field of its own
};

/** Refuses unknown fields and unsupported values, naming the field. `allowed` wins over UNSUPPORTED. */
export function checkFields(body: Body, allowed: ReadonlySet<string>): void {
  checkBodyFields(body, allowed, (key, value) => {
    // Own keys only: 'hasOwnProperty' or 'valueOf' would otherwise find Object.prototype's methods.
    const refuses = Object.hasOwn(UNSUPPORTED, key) ? UNSUPPORTED[key] : undefined;
    if (refuses === undefined) throw unknownParameter(key);
    if (value !== undefined && value !== null && refuses(value)) throw unsupportedParameter(key);
  });
}

function optionalBoolean(body: Body, key: string, fallback: boolean): boolean {
  const value = body[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') throw invalidArg(`${key} must be a boolean`, key);
  return value;
}

export interface StreamSettings {
  readonly stream: boolean;
  readonly includeUsage: boolean;
}

export function streamSettings(body: Body): StreamSettings {
  const stream = optionalBoolean(body, 'stream', false);
  const options = body.stream_options;
  if (options === undefined || options === null) return { stream, includeUsage: false };
  if (!stream) throw invalidArg('stream_options can only be set when stream is true', 'stream_options');
  if (typeof options !== 'object' || Array.isArray(options)) throw invalidArg('stream_options must be an object', 'stream_options');
  for (const key of Object.keys(options)) {
    // Obfuscation pads chunks against side channels; no padding is what `false` asks for.
    if (key === 'include_obfuscation' && (options as Body)[key] !== true) continue;
    if (key !== 'include_usage') throw unsupportedParameter(`stream_options.${key}`);
  }
  return { stream, includeUsage: optionalBoolean(options as Body, 'include_usage', false) };
}

export function choiceCount(body: Body): number {
  const n = body.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_CHOICES) throw invalidArg(`n must be an integer in [1, ${MAX_CHOICES}], got ${JSON.stringify(n)}`, 'n');
  return n;
}

export function optionalFlag(body: Body, key: string, fallback: boolean): boolean {
  return optionalBoolean(body, key, fallback);
}

/** OpenAI's `user` is an end-user label for abuse monitoring: checked, never used. */
export function checkNoOps(body: Body): void {
  if (body.user !== undefined && body.user !== null && typeof body.user !== 'string') throw invalidArg('user must be a string', 'user');
}
