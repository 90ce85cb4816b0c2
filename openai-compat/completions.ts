// POST /v1/completions (the legacy text API): one or more prompts, each as text or token ids,
// each fanned out n times (choice index = prompt × n + i, as OpenAI numbers them), answered in
// the text_completion shape for both the body and the stream chunks, with echo and the
// tokens / token_logprobs / top_logprobs / text_offset logprobs, which with echo cover the prompt
// too (prompt logprobs from the engine's prefill), and vLLM's prompt_logprobs.

import type { FastifyReply } from 'fastify';
import type { ProcessedRequest, PromptInput } from '../src/contracts/text-generation.js';
import { invalidArg } from '../src/errors.js';
import { readWireParams, type WireParams } from '../src/vocabulary/index.js';
import type { LlmModel } from '../src/serving/llm-backend.js';
import type { OpenAIContext } from './context.js';
import { prepareChoices, runChoices } from '../src/server/kit/choices.js';
import { checkFields, checkNoOps, choiceCount, COMPLETION_FIELDS, COMPLETION_VOCABULARY, MAX_CHOICES, optionalFlag, streamSettings } from './request-fields.js';
import { requireModel, requireObject, type Body } from '../src/server/kit/body.js';
import { candidateCount } from './best-of.js';
import { CompletionChoices } from './completion-choices.js';
import { fimPrompt, requestedSuffix, requireFim } from './fim.js';
import { collectChoices, streamChoices } from './respond.js';
import { responseHead, responseMeta, UsageTally } from './wire.js';
import { PRIORITY_HEADER, priorityOverride, withPriority } from '../src/serving/request-priority.js';

/** OpenAI's documented default for this API when max_tokens is omitted (an explicit null means "up to the context", as in vLLM). */
export const DEFAULT_MAX_TOKENS = 16;

const isTokenList = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((t) => typeof t === 'number');

/** `prompt` as a list of prompts: a string, strings, token ids, or lists of token ids. */
export function completionPrompts(prompt: unknown, addSpecialTokens: boolean): PromptInput[] {
  const text = (t: string): PromptInput => ({ kind: 'text', text: t, addSpecialTokens });
  if (typeof prompt === 'string') return [text(prompt)];
  if (isTokenList(prompt)) return [{ kind: 'tokens', tokenIds: prompt }];
  if (Array.isArray(prompt) && prompt.length > 0) {
    if (prompt.every((p) => typeof p === 'string')) return prompt.map(text);
    if (prompt.every(isTokenList)) return prompt.map((ids) => ({ kind: 'tokens', tokenIds: ids }));
  }
  throw invalidArg('prompt must be a string, an array of strings, an array of token ids, or an array of token id arrays (none empty)', 'prompt');
}

export function logprobCount(body: Body): number | null {
  const value = body.logprobs;
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalidArg('logprobs must be an integer (the number of alternatives per token)', 'logprobs');
  return value;
}

/**
 * The generation parameters, with OpenAI's default output length for this API. Echo with
 * logprobs asks the engine for prompt logprobs too, with as many alternatives as either wants.
 */
export function completionParams(body: Body, echoLogprobs: number | null = null, sampledLogprobs = false): WireParams {
  const { sampling, wireNames } = readWireParams(body, COMPLETION_VOCABULARY);
  const withDefault = body.max_tokens === undefined ? { ...sampling, max_tokens: DEFAULT_MAX_TOKENS } : sampling;
  // best_of ranks candidates by their sampled tokens' logprobs, asked or not.
  const withLength = sampledLogprobs && (withDefault.logprobs === undefined || withDefault.logprobs === null) ? { ...withDefault, logprobs: 0 } : withDefault;
  if (echoLogprobs === null) return { sampling: withLength, wireNames };
  const asked = sampling.prompt_logprobs;
  // An invalid prompt_logprobs is left for the vocabulary to refuse by name.
  const promptLogprobs = asked === undefined || asked === null ? echoLogprobs : typeof asked === 'number' ? Math.max(asked, echoLogprobs) : asked;
  return { sampling: { ...withLength, prompt_logprobs: promptLogprobs }, wireNames };
}

/** Every prompt prepared n times (the render route: once): all validation (and context checks) happens before anything runs. */
export async function prepareAll(model: LlmModel, body: Body, n: number, echoLogprobs: number | null, ranked: boolean): Promise<{ choices: ProcessedRequest[]; prompts: PromptInput[] }> {
  const prompts = withSuffix(model, completionPrompts(body.prompt, optionalFlag(body, 'add_special_tokens', true)), requestedSuffix(body.suffix));
  if (prompts.length * n > MAX_CHOICES)
    throw invalidArg(`${prompts.length} prompts × ${n} ${ranked ? 'best_of candidates' : 'choices (n)'} exceed the ${MAX_CHOICES} one request may have`, ranked ? 'best_of' : 'n');
  const params = completionParams(body, echoLogprobs, ranked);
  const choices = (await Promise.all(prompts.map((prompt) => prepareChoices(model, { prompt, ...params }, n)))).flat();
  return { choices, prompts };
}

/** With `suffix`, each text prompt framed for fill-in-the-middle; a token-id prompt cannot be. */
function withSuffix(model: LlmModel, prompts: PromptInput[], suffix: string | null): PromptInput[] {
  if (suffix === null) return prompts;
  const { tokenizer } = model.processor;
  const tokens = requireFim(model.name, (token) => tokenizer.token_to_id(token) !== undefined);
  return prompts.map((prompt) => {
    if (prompt.kind !== 'text') throw invalidArg('suffix needs a text prompt (the text before the gap), not token ids', 'suffix');
    return { ...prompt, text: fimPrompt(tokens, prompt.text, suffix) };
  });
}

export async function completions(ctx: OpenAIContext, rawBody: unknown, reply: FastifyReply, signal: AbortSignal): Promise<unknown> {
  const body = requireObject(rawBody);
  checkFields(body, COMPLETION_FIELDS);
  checkNoOps(body);
  const requested = requireModel(body);
  const model = ctx.llm(requested);
  const { stream, includeUsage } = streamSettings(body);
  const n = choiceCount(body);
  const candidates = candidateCount(body, n, stream);
  const echo = optionalFlag(body, 'echo', false);
  const topLogprobs = logprobCount(body);
  const { choices } = await prepareAll(model, body, candidates, echo ? topLogprobs : null, candidates > n);
  // Valid once prepared: the vocabulary checked it.
  const vllmPromptCount = typeof body.prompt_logprobs === 'number' ? body.prompt_logprobs : null;
  const echoed = choices.map((c) => (echo ? (c.promptText ?? model.processor.tokenizer.decode([...c.request.promptTokenIds], { skip_special_tokens: false })) : ''));
  const answers = new CompletionChoices(choices, ctx.tokenSpelling(model, body), { echoed, echo, topLogprobs, promptLogprobs: vllmPromptCount });
  const events = runChoices(model, withPriority(choices, priorityOverride(reply.request.headers[PRIORITY_HEADER])), signal);
  const meta = responseMeta('cmpl', requested, model);
  const usage = new UsageTally(candidates);

  if (stream) {
    await streamChoices(reply, events, {
      meta,
      head: 'text_completion',
      includeUsage,
      usage,
      sendTimeoutMs: ctx.options.streamSendTimeoutMs,
      keepAliveMs: ctx.options.sseKeepAliveMs,
      model,
      choice: (index, event) => {
        const { text, logprobs, promptLogprobs } = answers.piece(index, event);
        if (text === '' && (logprobs === null || logprobs.tokens.length === 0) && event.finishReason === null) return null;
        return { index, text, logprobs, finish_reason: event.finishReason, ...(promptLogprobs ? { prompt_logprobs: promptLogprobs } : {}) };
      },
    });
    return reply;
  }

  await collectChoices(events, usage, (index, event) => answers.collect(index, event));
  reply.header('x-request-id', meta.id);
  return { ...responseHead(meta, 'text_completion'), choices: answers.answer(candidates, n), usage: usage.toWire() };
}
