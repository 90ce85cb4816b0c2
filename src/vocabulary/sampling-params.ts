// A generation's checked parameters (src/vocabulary declares and checks them) turned
// into the engine's SamplingParams plus the stop and output options around it, with the model's
// defaults for omitted fields. Every rejection is an INVALID_ARG ConveyorError whose `param`
// names the field at fault in the caller's wire name, raised before anything is scheduled.

import type { GrammarSpec, SamplingParams } from '../contracts/generate.js';
import type { OutputOptions } from '../contracts/text-generation.js';
import { CONSTRAINT_FIELDS } from './structured-outputs.js';
import { checkTokenIds, parseGenerationParams, wireName, type GenerationLimits, type GenerationParams, type ReasoningEffort, type UncheckedParams, type WireNames } from './index.js';

/**
 * The thinking-token budget of each reasoning_effort level: none closes the block at once (and
 * turns the template's thinking off), high leaves it to the model and max_tokens.
 */
export const THINKING_BUDGETS: Readonly<Record<ReasoningEffort, number | null>> = {
  none: 0,
  minimal: 256,
  low: 1024,
  medium: 4096,
  high: null,
  xhigh: null,
  max: null,
};

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

export type SamplingLimits = GenerationLimits;

export interface ValidatedSampling {
  readonly sampling: SamplingParams;
  /** As requested; null when omitted: the input processor fills in the remaining context. */
  readonly maxTokens: number | null;
  /** The caller's name for max_tokens, for errors raised once the prompt length is known. */
  readonly maxTokensParam: string;
  readonly minTokens: number;
  readonly ignoreEos: boolean;
  readonly stopTokenIds: readonly number[];
  readonly output: OutputOptions;
  readonly priority: number;
  readonly cacheSalt: string | null;
  /** Alternatives per prompt token for prompt logprobs; null: none asked. */
  readonly promptLogprobs: number | null;
  /** The request's one output constraint (structured outputs), null for free text. */
  readonly grammar: GrammarSpec | null;
  /** The caller's name for the field that gave the constraint, for errors raised once the engine compiles it. */
  readonly grammarParam: string | null;
  /** As requested; null when omitted. The input processor turns none into the template's enable_thinking false. */
  readonly reasoningEffort: ReasoningEffort | null;
  /** Most tokens inside a thinking block: max_thinking_tokens, else the effort's budget; null: no limit. */
  readonly thinkingBudget: number | null;
}

export function validateSamplingParams(raw: UncheckedParams, limits: SamplingLimits, defaults: SamplingDefaults = {}, names: WireNames = {}): ValidatedSampling {
  return fromParams(parseGenerationParams(raw, limits, names), defaults, names);
}

/** The checked parameters with defaults filled in, split by who consumes them. */
export function fromParams(p: GenerationParams, defaults: SamplingDefaults, names: WireNames = {}): ValidatedSampling {
  // Completions' integer logprobs is the number of alternatives; chat's boolean comes with top_logprobs.
  const logprobs = typeof p.logprobs === 'number' || p.logprobs === true;
  const topLogprobs = typeof p.logprobs === 'number' ? p.logprobs : logprobs ? (p.top_logprobs ?? 0) : 0;
  const sampling: SamplingParams = {
    temperature: p.temperature ?? defaults.temperature ?? 1,
    topP: p.top_p ?? defaults.topP ?? 1,
    topK: Math.max(0, p.top_k ?? defaults.topK ?? 0),
    minP: p.min_p ?? defaults.minP ?? 0,
    repetitionPenalty: p.repetition_penalty ?? defaults.repetitionPenalty ?? 1,
    frequencyPenalty: p.frequency_penalty ?? 0,
    presencePenalty: p.presence_penalty ?? 0,
    logitBias: p.logit_bias ?? null,
    logprobs,
    topLogprobs,
    seed: p.seed ?? null,
  };
  return {
    sampling,
    maxTokens: p.max_tokens ?? null,
    maxTokensParam: wireName('max_tokens', names),
    minTokens: p.min_tokens ?? 0,
    ignoreEos: p.ignore_eos ?? false,
    stopTokenIds: p.stop_token_ids ?? [],
    output: { stop: p.stop ?? [], includeStopStrInOutput: p.include_stop_str_in_output ?? false, skipSpecialTokens: p.skip_special_tokens ?? true },
    priority: p.priority ?? 0,
    cacheSalt: p.cache_salt ?? null,
    promptLogprobs: p.prompt_logprobs ?? null,
    // The declaration lets at most one constraint through.
    grammar: p.response_format ?? p.structured_outputs ?? p.guided_json ?? p.guided_regex ?? p.guided_choice ?? p.guided_grammar ?? null,
    grammarParam: grammarField(p, names),
    reasoningEffort: p.reasoning_effort ?? null,
    thinkingBudget: p.max_thinking_tokens ?? (p.reasoning_effort ? THINKING_BUDGETS[p.reasoning_effort] : null),
  };
}

/** The constraints a client sends (tool_calls is the server's own, built from tools). */
type ClientGrammarSpec = Exclude<GrammarSpec, { readonly kind: 'tool_calls' }>;

/** Where inside structured_outputs each kind of constraint is written (vLLM's member names). */
const STRUCTURED_OUTPUTS_MEMBER: Readonly<Record<ClientGrammarSpec['kind'], string>> = { json_object: 'json_object', json_schema: 'json', regex: 'regex', choice: 'choice', ebnf: 'grammar' };

/**
 * The caller's name of the one constraint field set, or null; down to the member that carried
 * the grammar where the field has several, so an engine-side refusal names it as parsing would.
 */
function grammarField(p: GenerationParams, names: WireNames): string | null {
  const field = CONSTRAINT_FIELDS.find((f) => p[f] !== undefined && p[f] !== null);
  if (field === undefined) return null;
  const name = wireName(field, names);
  const spec = p[field] as ClientGrammarSpec;
  if (field === 'structured_outputs') return `${name}.${STRUCTURED_OUTPUTS_MEMBER[spec.kind]}`;
  if (field === 'response_format' && spec.kind === 'json_schema') return `${name}.json_schema.schema`;
  return name;
}

/** Integer token ids below vocabSize, for token-id prompts: the rule the declaration gives stop_token_ids. */
export function validateTokenIds(value: unknown, param: string, vocabSize: number): number[] {
  return checkTokenIds(value, param, vocabSize);
}
