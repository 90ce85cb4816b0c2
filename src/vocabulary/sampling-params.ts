// Validation of request sampling values (OpenAI / vLLM names, as they arrive in JSON) into the
// engine's SamplingParams plus the stop and output options around it. Every rejection is an
// INVALID_ARG ConveyorError whose `param` names the field at fault, raised before anything is
// scheduled. Ranges follow vLLM's SamplingParams checks and OpenAI's documented limits.

import type { SamplingParams } from '../contracts/generate.js';
import type { OutputOptions } from '../contracts/text-generation.js';
import { invalidArg } from '../errors.js';

/** Sampling fields of a request body. Values are checked at run time whatever their static type. */
export interface RawSamplingParams {
  readonly temperature?: number | null;
  readonly top_p?: number | null;
  /** −1 or 0 disables (vLLM accepts both). */
  readonly top_k?: number | null;
  readonly min_p?: number | null;
  readonly repetition_penalty?: number | null;
  readonly frequency_penalty?: number | null;
  readonly presence_penalty?: number | null;
  /** Token id (JSON object keys are strings) → bias in [−100, 100]. */
  readonly logit_bias?: Readonly<Record<string, number>> | null;
  /** Chat: a boolean (with top_logprobs). Completions: the number of alternatives, 0..20. */
  readonly logprobs?: boolean | number | null;
  readonly top_logprobs?: number | null;
  readonly max_tokens?: number | null;
  /** OpenAI's newer name for max_tokens; wins when both are present. */
  readonly max_completion_tokens?: number | null;
  readonly min_tokens?: number | null;
  readonly seed?: number | null;
  readonly stop?: string | readonly string[] | null;
  readonly stop_token_ids?: readonly number[] | null;
  readonly ignore_eos?: boolean | null;
  readonly include_stop_str_in_output?: boolean | null;
  readonly skip_special_tokens?: boolean | null;
}

/** Model-level defaults for omitted fields (generation_config.json, as vLLM applies them). */
export interface SamplingDefaults {
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly minP?: number;
  readonly repetitionPenalty?: number;
  /** max_new_tokens: caps the default output length when max_tokens is omitted (the input processor applies it). */
  readonly maxTokens?: number;
}

export interface SamplingLimits {
  /** Token ids must be below this (the tokenizer's vocabulary size, added tokens included). */
  readonly vocabSize: number;
  /** Most logprob alternatives per token (vLLM's max_logprobs). */
  readonly maxLogprobs?: number;
}

export interface ValidatedSampling {
  readonly sampling: SamplingParams;
  /** As requested; null when omitted: the input processor fills in the remaining context. */
  readonly maxTokens: number | null;
  /** Which field carried maxTokens, for errors raised once the prompt length is known. */
  readonly maxTokensParam: 'max_tokens' | 'max_completion_tokens';
  readonly minTokens: number;
  readonly ignoreEos: boolean;
  readonly stopTokenIds: readonly number[];
  readonly output: OutputOptions;
}

export const MAX_LOGPROBS = 20;
export const MAX_LOGIT_BIAS_ENTRIES = 300;
export const LOGIT_BIAS_LIMIT = 100;
export const MAX_STOP_STRINGS = 32;
const PENALTY_LIMIT = 2;

export function validateSamplingParams(raw: RawSamplingParams, limits: SamplingLimits, defaults: SamplingDefaults = {}): ValidatedSampling {
  const maxLogprobs = limits.maxLogprobs ?? MAX_LOGPROBS;
  const [logprobs, topLogprobs] = validateLogprobs(raw.logprobs, raw.top_logprobs, maxLogprobs);
  const sampling: SamplingParams = {
    temperature: check(number(raw.temperature, 'temperature', defaults.temperature ?? 1), 'temperature', (v) => v >= 0, 'must be non-negative'),
    topP: check(number(raw.top_p, 'top_p', defaults.topP ?? 1), 'top_p', (v) => v > 0 && v <= 1, 'must be in (0, 1]'),
    topK: Math.max(0, check(integer(raw.top_k, 'top_k', defaults.topK ?? 0), 'top_k', (v) => v >= -1, 'must be -1 or 0 (disabled) or a positive integer')),
    minP: check(number(raw.min_p, 'min_p', defaults.minP ?? 0), 'min_p', (v) => v >= 0 && v <= 1, 'must be in [0, 1]'),
    repetitionPenalty: check(number(raw.repetition_penalty, 'repetition_penalty', defaults.repetitionPenalty ?? 1), 'repetition_penalty', (v) => v > 0, 'must be greater than 0'),
    frequencyPenalty: penalty(raw.frequency_penalty, 'frequency_penalty'),
    presencePenalty: penalty(raw.presence_penalty, 'presence_penalty'),
    logitBias: validateLogitBias(raw.logit_bias, limits.vocabSize),
    logprobs,
    topLogprobs,
    seed: validateSeed(raw.seed),
  };
  const maxTokensParam = raw.max_completion_tokens !== undefined && raw.max_completion_tokens !== null ? 'max_completion_tokens' : 'max_tokens';
  const requested = raw[maxTokensParam];
  const maxTokens = requested === undefined || requested === null ? null : check(integer(requested, maxTokensParam, 1), maxTokensParam, (v) => v >= 1, 'must be at least 1');
  const minTokens = check(integer(raw.min_tokens, 'min_tokens', 0), 'min_tokens', (v) => v >= 0, 'must be non-negative');
  if (maxTokens !== null && minTokens > maxTokens) throw invalidArg(`min_tokens (${minTokens}) must not exceed ${maxTokensParam} (${maxTokens})`, 'min_tokens');
  return {
    sampling,
    maxTokens,
    maxTokensParam,
    minTokens,
    ignoreEos: boolean(raw.ignore_eos, 'ignore_eos', false),
    stopTokenIds: validateTokenIds(raw.stop_token_ids, 'stop_token_ids', limits.vocabSize),
    output: {
      stop: validateStop(raw.stop),
      includeStopStrInOutput: boolean(raw.include_stop_str_in_output, 'include_stop_str_in_output', false),
      skipSpecialTokens: boolean(raw.skip_special_tokens, 'skip_special_tokens', true),
    },
  };
}

function absent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

function number(value: unknown, param: string, fallback: number): number {
  if (absent(value)) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalidArg(`${param} must be a finite number, got ${describe(value)}`, param);
  return value;
}

function integer(value: unknown, param: string, fallback: number): number {
  const v = number(value, param, fallback);
  if (!Number.isSafeInteger(v)) throw invalidArg(`${param} must be an integer, got ${v}`, param);
  return v;
}

function boolean(value: unknown, param: string, fallback: boolean): boolean {
  if (absent(value)) return fallback;
  if (typeof value !== 'boolean') throw invalidArg(`${param} must be a boolean, got ${describe(value)}`, param);
  return value;
}

function check(value: number, param: string, ok: (v: number) => boolean, rule: string): number {
  if (!ok(value)) throw invalidArg(`${param} ${rule}, got ${value}`, param);
  return value;
}

function penalty(value: unknown, param: string): number {
  return check(number(value, param, 0), param, (v) => v >= -PENALTY_LIMIT && v <= PENALTY_LIMIT, `must be in [-${PENALTY_LIMIT}, ${PENALTY_LIMIT}]`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number') return String(value);
  return Array.isArray(value) ? 'an array' : typeof value;
}

function validateLogprobs(logprobs: unknown, top: unknown, max: number): [boolean, number] {
  const topGiven = !absent(top);
  const topLogprobs = check(integer(top, 'top_logprobs', 0), 'top_logprobs', (v) => v >= 0 && v <= max, `must be in [0, ${max}]`);
  if (typeof logprobs === 'number') {
    // Completions API: logprobs is itself the number of alternatives.
    if (topGiven) throw invalidArg('top_logprobs cannot be combined with an integer logprobs', 'top_logprobs');
    return [true, check(integer(logprobs, 'logprobs', 0), 'logprobs', (v) => v >= 0 && v <= max, `must be in [0, ${max}]`)];
  }
  const enabled = boolean(logprobs, 'logprobs', false);
  if (topGiven && topLogprobs > 0 && !enabled) throw invalidArg('top_logprobs requires logprobs to be true', 'top_logprobs');
  return [enabled, enabled ? topLogprobs : 0];
}

function validateSeed(value: unknown): number | null {
  if (absent(value)) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalidArg(`seed must be an integer within ±(2^53 − 1), got ${describe(value)}`, 'seed');
  return value;
}

function validateLogitBias(value: unknown, vocabSize: number): Readonly<Record<number, number>> | null {
  if (absent(value)) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidArg('logit_bias must be an object mapping token ids to biases', 'logit_bias');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_LOGIT_BIAS_ENTRIES) throw invalidArg(`logit_bias has ${entries.length} entries; at most ${MAX_LOGIT_BIAS_ENTRIES} are allowed`, 'logit_bias');
  if (entries.length === 0) return null;
  const bias: Record<number, number> = {};
  for (const [key, raw] of entries) {
    const id = /^\d+$/.test(key) ? Number(key) : NaN;
    if (!Number.isSafeInteger(id)) throw invalidArg(`logit_bias key ${describe(key)} is not a token id`, 'logit_bias');
    if (id >= vocabSize) throw invalidArg(`logit_bias token id ${id} is not in the vocabulary (0..${vocabSize - 1})`, 'logit_bias');
    if (typeof raw !== 'number' || !(raw >= -LOGIT_BIAS_LIMIT && raw <= LOGIT_BIAS_LIMIT)) {
      throw invalidArg(`logit_bias value for token ${id} must be a number in [-${LOGIT_BIAS_LIMIT}, ${LOGIT_BIAS_LIMIT}], got ${describe(raw)}`, 'logit_bias');
    }
    bias[id] = raw;
  }
  return bias;
}

/** Integer token ids below vocabSize; used for stop_token_ids and token-id prompts. */
export function validateTokenIds(value: unknown, param: string, vocabSize: number): number[] {
  if (absent(value)) return [];
  if (!Array.isArray(value)) throw invalidArg(`${param} must be an array of token ids`, param);
  for (const id of value) {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) throw invalidArg(`${param} must contain non-negative integer token ids, got ${describe(id)}`, param);
    if (id >= vocabSize) throw invalidArg(`${param}: token id ${id} is not in the vocabulary (0..${vocabSize - 1})`, param);
  }
  return [...(value as number[])];
}

function validateStop(value: unknown): string[] {
  if (absent(value)) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) throw invalidArg('stop must be a string or an array of strings', 'stop');
  if (list.length > MAX_STOP_STRINGS) throw invalidArg(`stop has ${list.length} strings; at most ${MAX_STOP_STRINGS} are allowed`, 'stop');
  if (list.some((s: string) => s.length === 0)) throw invalidArg('stop strings must not be empty', 'stop');
  return [...new Set(list as string[])];
}
