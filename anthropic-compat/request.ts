// A Messages request body turned into one chat generation: which top-level fields are accepted,
// the sampling fields under Anthropic's names (src/vocabulary: max_tokens required,
// stop_sequences for stop, temperature / top_p / top_k), `thinking` onto the chat template's
// switch and the thinking-token budget, `output_config` onto reasoning_effort and the
// response_format constraint, the conversation (history.ts) and the tool plan (tools.ts). Fields
// Anthropic defines that this server cannot honour are refused by name rather than silently dropped.

import type { ChatMessage } from '../src/contracts/text-generation.js';
import { invalidArg } from '../src/errors.js';
import type { GenerateInput } from '../src/serving/llm-backend.js';
import { GENERATION_FIELDS, readWireParams, wireFieldNames, type GenerationField, type WireVocabulary } from '../src/vocabulary/index.js';
import { keepsSpecialTokens, type ChatToolPlan } from '../src/server/kit/tool-plan.js';
import { checkFields as checkBodyFields, isObject, type Body } from '../src/server/kit/body.js';
import { chatHistory } from './history.js';

/** The declared generation fields Anthropic's API carries under their own names. */
const CARRIED: readonly GenerationField[] = ['max_tokens', 'temperature', 'top_p', 'top_k'];

export const MESSAGES_VOCABULARY: WireVocabulary = {
  omit: GENERATION_FIELDS.filter((field) => !CARRIED.includes(field)),
  aliases: { stop_sequences: 'stop' },
};

/**
 * Labels and service options that change nothing a local server produces; checked and unused.
 * cache_control asks for prompt caching, which the prefix cache does for every request anyway.
 */
const NO_OP_FIELDS = ['metadata', 'service_tier', 'cache_control', 'inference_geo', 'speed'];

/** Every field the routes read. */
const CONVERSATION_FIELDS = ['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'output_config'];
export const MESSAGES_FIELDS = new Set([...CONVERSATION_FIELDS, ...wireFieldNames(MESSAGES_VOCABULARY), 'stream', ...NO_OP_FIELDS]);
export const COUNT_TOKENS_FIELDS = new Set(CONVERSATION_FIELDS);

/** Anthropic refuses what it does not define; so does this server, naming the field. */
export function checkFields(body: Body, allowed: ReadonlySet<string>): void {
  checkBodyFields(body, allowed, (key) => {
    throw invalidArg(`${key}: Extra inputs are not permitted`, key);
  });
  if (body.metadata !== undefined && body.metadata !== null && !isObject(body.metadata)) throw invalidArg('metadata must be an object', 'metadata');
}

/** Anthropic's wording of a missing model (src/server/kit/body.ts requireModel). */
export const MODEL_REQUIRED = 'model: Field required (a non-empty string)';

export function streamFlag(body: Body): boolean {
  const stream = body.stream ?? false;
  if (typeof stream !== 'boolean') throw invalidArg('stream must be a boolean', 'stream');
  return stream;
}

interface Thinking {
  /** The chat template's enable_thinking switch; null leaves the template's default. */
  readonly kwargs: Readonly<Record<string, unknown>> | null;
  /** Most tokens inside the thinking block (the engine closes it when spent); null: no limit of its own. */
  readonly budget: number | null;
}

/** `thinking` onto the template's switch and the thinking-token budget; absent leaves both to the model. */
function thinkingOf(body: Body): Thinking {
  const thinking = body.thinking;
  if (thinking === undefined || thinking === null) return { kwargs: null, budget: null };
  if (!isObject(thinking)) throw invalidArg('thinking must be an object with a type ("enabled", "adaptive" or "disabled")', 'thinking');
  // A budget of 0 also closes a block the model opens anyway.
  if (thinking.type === 'disabled') return { kwargs: { enable_thinking: false }, budget: 0 };
  // Adaptive thinking leaves how much to think to the model.
  if (thinking.type === 'adaptive') return { kwargs: { enable_thinking: true }, budget: null };
  if (thinking.type !== 'enabled') throw invalidArg(`thinking.type must be "enabled", "adaptive" or "disabled", got ${JSON.stringify(thinking.type)}`, 'thinking.type');
  const budget = thinking.budget_tokens;
  if (typeof budget !== 'number' || !Number.isSafeInteger(budget) || budget < 1) throw invalidArg('thinking.budget_tokens must be a positive integer', 'thinking.budget_tokens');
  if (typeof body.max_tokens === 'number' && budget >= body.max_tokens) throw invalidArg('thinking.budget_tokens must be less than max_tokens', 'thinking.budget_tokens');
  return { kwargs: { enable_thinking: true }, budget };
}

/** Anthropic's effort levels, each the vocabulary's reasoning_effort of the same name. */
const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'];

/** `output_config`: effort as reasoning_effort, format (a JSON Schema) as the response_format constraint. */
function outputConfig(body: Body): { readonly sampling: Record<string, unknown>; readonly wireNames: Record<string, string> } {
  const config = body.output_config;
  if (config === undefined || config === null) return { sampling: {}, wireNames: {} };
  if (!isObject(config)) throw invalidArg('output_config must be an object', 'output_config');
  for (const key of Object.keys(config)) if (key !== 'effort' && key !== 'format') throw invalidArg(`output_config.${key}: Extra inputs are not permitted`, `output_config.${key}`);
  const sampling: Record<string, unknown> = {};
  const { effort, format } = config;
  if (effort !== undefined && effort !== null) {
    if (typeof effort !== 'string' || !EFFORTS.includes(effort)) throw invalidArg(`output_config.effort must be one of ${EFFORTS.join(', ')}`, 'output_config.effort');
    sampling.reasoning_effort = effort;
  }
  if (format !== undefined && format !== null) {
    if (!isObject(format) || format.type !== 'json_schema' || !isObject(format.schema)) throw invalidArg('output_config.format must be {"type": "json_schema", "schema": {…}}', 'output_config.format');
    sampling.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
  }
  return { sampling, wireNames: { reasoning_effort: 'output_config.effort', response_format: 'output_config.format' } };
}

/** The conversation as the template renders it (also what count_tokens counts). */
export function messagesPrompt(body: Body, plan: ChatToolPlan): GenerateInput['prompt'] {
  const messages: ChatMessage[] = chatHistory(body.system, body.messages);
  return { kind: 'chat', messages, addGenerationPrompt: true, chatTemplateKwargs: thinkingOf(body).kwargs, tools: plan.tools };
}

/** A whole Messages request as the LLM backend's input. */
export function messagesInput(body: Body, plan: ChatToolPlan): GenerateInput {
  // Anthropic has no default output length: max_tokens is required.
  if (body.max_tokens === undefined || body.max_tokens === null) throw invalidArg('max_tokens: Field required', 'max_tokens');
  const wire = readWireParams(body, MESSAGES_VOCABULARY);
  const { budget } = thinkingOf(body);
  const output = outputConfig(body);
  return {
    prompt: messagesPrompt(body, plan),
    sampling: { ...wire.sampling, ...output.sampling, skip_special_tokens: keepsSpecialTokens(plan, undefined), ...(budget === null ? {} : { max_thinking_tokens: budget }) },
    wireNames: { ...wire.wireNames, ...output.wireNames, max_thinking_tokens: 'thinking.budget_tokens' },
    ...(plan.grammar ? { grammar: { spec: plan.grammar, param: 'tool_choice' } } : {}),
  };
}
