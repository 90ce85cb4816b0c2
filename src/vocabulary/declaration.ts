// The generation request vocabulary, declared once: every parameter a front end may pass to a
// generation (sampling, stop conditions, logprobs, scheduling extras), its accepted values, and
// the message a rejection reads. The TypeScript types and the validator both derive from this
// declaration; front ends only map their wire names onto it (wire.ts). Ranges follow vLLM's
// SamplingParams checks and OpenAI's documented limits.
//
// A new field is one entry here. Its key order is the order fields are checked in, so the first
// error a request gets is the one it got before this vocabulary was declared.

import { z } from 'zod';
import { isObject } from './json-object.js';
import { byType, describe, finite, flag, integer, optional, tokenIds, valueKinds } from './rules.js';
import { CONSTRAINT_FIELDS, guidedChoice, guidedGrammar, guidedJson, guidedRegex, responseFormat, structuredOutputs } from './structured-outputs.js';

export const MAX_LOGPROBS = 20;
export const MAX_LOGIT_BIAS_ENTRIES = 300;
export const LOGIT_BIAS_LIMIT = 100;
export const MAX_STOP_STRINGS = 32;
const PENALTY_LIMIT = 2;

/** What the declaration checks against the model being asked. */
export interface GenerationLimits {
  /** Token ids must be below this (the tokenizer's vocabulary size, added tokens included). */
  readonly vocabSize: number;
  /** Most logprob alternatives per token (vLLM's max_logprobs); 20 when absent. */
  readonly maxLogprobs?: number;
}

const penalty = () => finite((v) => v >= -PENALTY_LIMIT && v <= PENALTY_LIMIT, `must be in [-${PENALTY_LIMIT}, ${PENALTY_LIMIT}]`);

/** Token id (JSON object keys are strings) → bias in [−100, 100]; an empty map is no bias. */
function logitBias(vocabSize: number) {
  return z
    .custom<Readonly<Record<string, number>>>((v) => isObject(v), { error: '{} must be an object mapping token ids to biases' })
    .transform((map, ctx) => {
      const entries = Object.entries(map);
      const fail = (message: string) => {
        ctx.addIssue({ code: 'custom', message });
        return z.NEVER;
      };
      if (entries.length > MAX_LOGIT_BIAS_ENTRIES) return fail(`{} has ${entries.length} entries; at most ${MAX_LOGIT_BIAS_ENTRIES} are allowed`);
      const bias: Record<number, number> = {};
      for (const [key, value] of entries) {
        const id = /^\d+$/.test(key) ? Number(key) : NaN;
        if (!Number.isSafeInteger(id)) return fail(`{} key ${describe(key)} is not a token id`);
        if (id >= vocabSize) return fail(`{} token id ${id} is not in the vocabulary (0..${vocabSize - 1})`);
        if (typeof value !== 'number' || !(value >= -LOGIT_BIAS_LIMIT && value <= LOGIT_BIAS_LIMIT)) {
          return fail(`{} value for token ${id} must be a number in [-${LOGIT_BIAS_LIMIT}, ${LOGIT_BIAS_LIMIT}], got ${describe(value)}`);
        }
        bias[id] = value;
      }
      return entries.length === 0 ? undefined : bias;
    })
    .register(valueKinds, { kind: 'object' });
}

/** One stop string or a list of them, deduplicated; never empty strings. */
function stopStrings() {
  const isStrings = (v: unknown): v is string | readonly string[] => typeof v === 'string' || (Array.isArray(v) && v.every((s) => typeof s === 'string'));
  return z
    .custom<string | readonly string[]>(isStrings, { error: '{} must be a string or an array of strings' })
    .transform((value, ctx) => {
      const list = typeof value === 'string' ? [value] : value;
      if (list.length > MAX_STOP_STRINGS) ctx.addIssue({ code: 'custom', message: `{} has ${list.length} strings; at most ${MAX_STOP_STRINGS} are allowed` });
      else if (list.some((s) => s.length === 0)) ctx.addIssue({ code: 'custom', message: '{} strings must not be empty' });
      else return [...new Set(list)];
      return z.NEVER;
    })
    .register(valueKinds, { kind: 'strings' });
}

/** OpenAI's levels (the SDK's ReasoningEffort): xhigh and max ask for as much thinking as high. */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

function reasoningEffort() {
  const isEffort = (v: unknown): v is ReasoningEffort => typeof v === 'string' && (REASONING_EFFORTS as readonly string[]).includes(v);
  return z.custom<ReasoningEffort>(isEffort, { error: (iss) => `{} must be one of ${REASONING_EFFORTS.join(', ')}, got ${describe(iss.input)}` }).register(valueKinds, { kind: 'string' });
}

function fields(limits: GenerationLimits) {
  const maxLogprobs = limits.maxLogprobs ?? MAX_LOGPROBS;
  const alternatives = () => integer((v) => v >= 0 && v <= maxLogprobs, `must be in [0, ${maxLogprobs}]`);
  return {
    // Scheduling extras: they reach the engine, not the sampler.
    /** Lower runs first under the priority scheduling policy. */
    priority: optional(z.number({ error: '{} must be an integer' }).refine(Number.isSafeInteger, { error: '{} must be an integer' }).register(valueKinds, { kind: 'int' })),
    /** Namespaces the prefix cache: requests share cached blocks only with the same salt. */
    cache_salt: optional(z.string({ error: '{} must be a non-empty string' }).min(1, { error: '{} must be a non-empty string' }).register(valueKinds, { kind: 'string' })),

    // Logprobs.
    top_logprobs: optional(alternatives()),
    /** Chat: a boolean (with top_logprobs). Completions: the number of alternatives itself. */
    logprobs: optional(byType((v) => typeof v === 'number', flag(), alternatives())),
    /** vLLM: the prompt tokens' logprobs with this many alternatives each (0: the token's own). */
    prompt_logprobs: optional(alternatives()),

    // Sampling.
    temperature: optional(finite((v) => v >= 0, 'must be non-negative')),
    top_p: optional(finite((v) => v > 0 && v <= 1, 'must be in (0, 1]')),
    /** −1 or 0 disables (vLLM accepts both). */
    top_k: optional(integer((v) => v >= -1, 'must be -1 or 0 (disabled) or a positive integer')),
    min_p: optional(finite((v) => v >= 0 && v <= 1, 'must be in [0, 1]')),
    repetition_penalty: optional(finite((v) => v > 0, 'must be greater than 0')),
    frequency_penalty: optional(penalty()),
    presence_penalty: optional(penalty()),
    logit_bias: optional(logitBias(limits.vocabSize)),
    seed: optional(
      z
        .number({ error: (iss) => `{} must be an integer within ±(2^53 − 1), got ${describe(iss.input)}` })
        .refine(Number.isSafeInteger, { error: (iss) => `{} must be an integer within ±(2^53 − 1), got ${describe(iss.input)}` })
        .register(valueKinds, { kind: 'int' }),
    ),

    // Stop conditions.
    /** Absent: the input processor fills in the remaining context. */
    max_tokens: optional(integer((v) => v >= 1, 'must be at least 1')),
    min_tokens: optional(integer((v) => v >= 0, 'must be non-negative')),
    ignore_eos: optional(flag()),
    stop_token_ids: optional(tokenIds(limits.vocabSize)),
    /** Matched on the detokenized text. */
    stop: optional(stopStrings()),
    include_stop_str_in_output: optional(flag()),
    skip_special_tokens: optional(flag()),

    // Reasoning models (a model with a reasoning_parser): how much the model may think.
    /** OpenAI's levels: none turns the template's thinking off; each level has a thinking-token budget (sampling-params.ts). */
    reasoning_effort: optional(reasoningEffort()),
    /** Most tokens inside the thinking block; the engine closes the block once they are spent. Wins over reasoning_effort's budget. */
    max_thinking_tokens: optional(integer((v) => v >= 0, 'must be non-negative')),

    // Structured outputs: each becomes a GrammarSpec (structured-outputs.ts); at most one per request.
    /** OpenAI: {type: "text" | "json_object" | "json_schema", json_schema: {name, schema, strict, description}}. */
    response_format: optional(responseFormat()),
    /** vLLM: exactly one of json (a JSON Schema), regex, choice, grammar (EBNF), json_object. */
    structured_outputs: optional(structuredOutputs()),
    /** vLLM's older spellings of structured_outputs' members. */
    guided_json: optional(guidedJson()),
    guided_regex: optional(guidedRegex()),
    guided_choice: optional(guidedChoice()),
    guided_grammar: optional(guidedGrammar()),
  };
}

type Fields = ReturnType<typeof fields>;

/** The rules between fields, checked once each field is valid on its own. */
function crossChecks(params: z.output<z.ZodObject<Fields>>, ctx: z.RefinementCtx): void {
  const { logprobs, top_logprobs: top, max_tokens: max, min_tokens: min } = params;
  if (typeof logprobs === 'number' && top !== undefined) ctx.addIssue({ code: 'custom', path: ['top_logprobs'], message: '{} cannot be combined with an integer {logprobs}' });
  else if (top !== undefined && top > 0 && logprobs !== true) ctx.addIssue({ code: 'custom', path: ['top_logprobs'], message: '{} requires {logprobs} to be true' });
  if (max !== undefined && min !== undefined && min > max) ctx.addIssue({ code: 'custom', path: ['min_tokens'], message: `{} (${min}) must not exceed {max_tokens} (${max})` });
  const constraints = CONSTRAINT_FIELDS.filter((field) => params[field] !== undefined);
  if (constraints.length > 1) {
    ctx.addIssue({ code: 'custom', path: [constraints[1]!], message: `{} cannot be combined with {${constraints[0]}}: a request takes one output constraint` });
  }
}

function build(limits: GenerationLimits) {
  return z.object(fields(limits)).superRefine(crossChecks);
}

export type GenerationParamsSchema = ReturnType<typeof build>;
/** A generation's parameters once checked: absent fields are undefined (the model's defaults apply). */
export type GenerationParams = z.output<GenerationParamsSchema>;
/** The parameters as a caller may write them. */
export type GenerationParamsInput = z.input<GenerationParamsSchema>;
export type GenerationField = keyof Fields;

/** Every declared field, in check order. */
export const GENERATION_FIELDS: readonly GenerationField[] = build({ vocabSize: 1 }).keyof().options;

const schemas = new Map<string, GenerationParamsSchema>();

/** The declaration checked against one model's limits (built once per distinct limits). */
export function generationParamsSchema(limits: GenerationLimits): GenerationParamsSchema {
  const key = `${limits.vocabSize}/${limits.maxLogprobs ?? MAX_LOGPROBS}`;
  let schema = schemas.get(key);
  if (!schema) {
    schema = build(limits);
    schemas.set(key, schema);
  }
  return schema;
}

/** How a field's value is written where a protocol carries parameters as text. */
export function valueKind(field: GenerationField) {
  const kind = valueKinds.get(generationParamsSchema({ vocabSize: 1 }).shape[field]);
  if (!kind) throw new Error(`generation field ${field} declares no value kind`);
  return kind.kind;
}
