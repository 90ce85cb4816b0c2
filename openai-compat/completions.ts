// POST /v1/completions (the legacy text API): one or more prompts, each as text or token ids,
// each fanned out n times (choice index = prompt × n + i, as OpenAI numbers them), answered in
// the text_completion shape for both the body and the stream chunks, with echo and the
// tokens / token_logprobs / top_logprobs / text_offset logprobs, which with echo cover the prompt
// too (prompt logprobs from the engine's prefill), and vLLM's prompt_logprobs.

import type { FastifyReply } from 'fastify';
import type { GenerationEvent, ProcessedRequest, PromptInput } from '../src/contracts/text-generation.js';
import { invalidArg } from '../src/errors.js';
import { readWireParams, type WireParams } from '../src/vocabulary/index.js';
import type { LlmModel } from '../src/serving/llm-backend.js';
import type { OpenAIContext } from './context.js';
import { prepareChoices, runChoices } from './generation.js';
import { appendCompletionLogprobs, completionLogprobs, type CompletionLogprobs } from './logprobs.js';
import { checkFields, checkNoOps, choiceCount, COMPLETION_FIELDS, COMPLETION_VOCABULARY, MAX_CHOICES, optionalFlag, requireModel, requireObject, streamSettings, type Body } from './request-fields.js';
import { echoedPromptLogprobs, vllmPromptLogprobs, type VllmPromptLogprobs } from './prompt-logprobs.js';
import { collectChoices, streamChoices } from './respond.js';
import { responseHead, responseMeta, UsageTally } from './wire.js';

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

function logprobCount(body: Body): number | null {
  const value = body.logprobs;
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalidArg('logprobs must be an integer (the number of alternatives per token)', 'logprobs');
  return value;
}

/**
 * The generation parameters, with OpenAI's default output length for this API. Echo with
 * logprobs asks the engine for prompt logprobs too, with as many alternatives as either wants.
 */
export function completionParams(body: Body, echoLogprobs: number | null = null): WireParams {
  const { sampling, wireNames } = readWireParams(body, COMPLETION_VOCABULARY);
  const withLength = body.max_tokens === undefined ? { ...sampling, max_tokens: DEFAULT_MAX_TOKENS } : sampling;
  if (echoLogprobs === null) return { sampling: withLength, wireNames };
  const asked = sampling.prompt_logprobs;
  // An invalid prompt_logprobs is left for the vocabulary to refuse by name.
  const promptLogprobs = asked === undefined || asked === null ? echoLogprobs : typeof asked === 'number' ? Math.max(asked, echoLogprobs) : asked;
  return { sampling: { ...withLength, prompt_logprobs: promptLogprobs }, wireNames };
}

/** Every prompt prepared n times: all validation (and context checks) happens before anything runs. */
async function prepareAll(model: LlmModel, body: Body, n: number, echoLogprobs: number | null): Promise<{ choices: ProcessedRequest[]; prompts: PromptInput[] }> {
  const prompts = completionPrompts(body.prompt, optionalFlag(body, 'add_special_tokens', true));
  if (prompts.length * n > MAX_CHOICES) throw invalidArg(`${prompts.length} prompts × n=${n} exceed the ${MAX_CHOICES} choices one request may have`, 'n');
  const params = completionParams(body, echoLogprobs);
  const choices = (await Promise.all(prompts.map((prompt) => prepareChoices(model, { prompt, ...params }, n)))).flat();
  return { choices, prompts };
}

interface CompletionChoice {
  text: string;
  logprobs: CompletionLogprobs | null;
  /** Character offset of the next token in the choice's text (text_offset). */
  offset: number;
  finishReason: string | null;
  started: boolean;
  /** vLLM's prompt_logprobs, once the first event brought them. */
  promptLogprobs: VllmPromptLogprobs | null;
}

export async function completions(ctx: OpenAIContext, rawBody: unknown, reply: FastifyReply, signal: AbortSignal): Promise<unknown> {
  const body = requireObject(rawBody);
  checkFields(body, COMPLETION_FIELDS);
  checkNoOps(body);
  const requested = requireModel(body);
  const model = ctx.llm(requested);
  const { stream, includeUsage } = streamSettings(body);
  const n = choiceCount(body);
  const echo = optionalFlag(body, 'echo', false);
  const topLogprobs = logprobCount(body);
  const { choices } = await prepareAll(model, body, n, echo ? topLogprobs : null);
  // Valid once prepared: the vocabulary checked it.
  const vllmPromptCount = typeof body.prompt_logprobs === 'number' ? body.prompt_logprobs : null;
  const tokenText = ctx.tokenText(model);
  const echoed = choices.map((c) => (echo ? (c.promptText ?? model.processor.tokenizer.decode([...c.request.promptTokenIds], { skip_special_tokens: false })) : ''));
  const state: CompletionChoice[] = echoed.map((e) => ({
    text: '',
    logprobs: topLogprobs === null ? null : emptyLogprobs(),
    offset: e.length,
    finishReason: null,
    started: false,
    promptLogprobs: null,
  }));
  const events = runChoices(model, choices, signal, ctx.admission);
  const meta = responseMeta('cmpl', requested, model);
  const usage = new UsageTally(n);
  // The echoed prompt (and its logprobs) leads each choice: the whole text, or the first chunk of a stream.
  const step = (index: number, event: GenerationEvent): { text: string; logprobs: CompletionLogprobs | null; promptLogprobs: VllmPromptLogprobs | null } => {
    const choice = state[index]!;
    const first = !choice.started;
    const text = (first ? echoed[index]! : '') + event.text;
    choice.started = true;
    const prompt = first && event.promptLogprobs ? event.promptLogprobs : null;
    const promptLogprobs = prompt && vllmPromptCount !== null ? vllmPromptLogprobs(prompt, tokenText, vllmPromptCount) : null;
    if (topLogprobs === null) return { text, logprobs: null, promptLogprobs };
    const logprobs = emptyLogprobs();
    if (first && echo) appendCompletionLogprobs(logprobs, echoedPromptLogprobs(choices[index]!.request.promptTokenIds, prompt ?? [], tokenText, topLogprobs).logprobs);
    if (event.logprobs) {
      const generated = completionLogprobs(event.logprobs, tokenText, choice.offset);
      choice.offset = generated.offset;
      appendCompletionLogprobs(logprobs, generated.logprobs);
    }
    return { text, logprobs, promptLogprobs };
  };

  if (stream) {
    await streamChoices(reply, events, {
      meta,
      object: 'text_completion',
      includeUsage,
      usage,
      sendTimeoutMs: ctx.options.streamSendTimeoutMs,
      choice: (index, event) => {
        const { text, logprobs, promptLogprobs } = step(index, event);
        if (text === '' && (logprobs === null || logprobs.tokens.length === 0) && event.finishReason === null) return null;
        return { index, text, logprobs, finish_reason: event.finishReason, ...(promptLogprobs ? { prompt_logprobs: promptLogprobs } : {}) };
      },
    });
    return reply;
  }

  await collectChoices(events, usage, (index, event) => {
    const { text, logprobs, promptLogprobs } = step(index, event);
    const choice = state[index]!;
    choice.text += text;
    choice.promptLogprobs ??= promptLogprobs;
    if (logprobs && choice.logprobs) appendCompletionLogprobs(choice.logprobs, logprobs);
    choice.finishReason = event.finishReason;
  });
  reply.header('x-request-id', meta.id);
  return {
    ...responseHead(meta, 'text_completion'),
    choices: state.map((c, index) => ({ index, text: c.text, logprobs: c.logprobs, finish_reason: c.finishReason, ...(vllmPromptCount !== null ? { prompt_logprobs: c.promptLogprobs } : {}) })),
    usage: usage.toWire(),
  };
}

function emptyLogprobs(): CompletionLogprobs {
  return { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
}
