// vLLM's render routes: POST /v1/completions/render and /v1/chat/completions/render take the
// body /v1/completions or /v1/chat/completions would, run it through the same preparation
// (field checks, chat template, tools, FIM framing, context check) and answer with what the
// engine would be handed, without generating: vLLM's token-in request (its GenerateRequest
// shape). Routers call them for exact token ids, e.g. the inference gateway's precise
// prefix-cache scorer, which hashes `token_ids` into blocks as the engine does.

import { randomUUID } from 'node:crypto';
import type { ProcessedRequest } from '../src/contracts/text-generation.js';
import type { LlmModel } from '../src/serving/llm-backend.js';
import { candidateCount } from './best-of.js';
import { chatInput } from './chat.js';
import { logprobCount, prepareAll } from './completions.js';
import type { OpenAIContext } from './context.js';
import { prepareChoices } from '../src/server/kit/choices.js';
import { CHAT_FIELDS, checkFields, checkNoOps, choiceCount, COMPLETION_FIELDS, optionalFlag, streamSettings } from './request-fields.js';
import { requireModel, requireObject, type Body } from '../src/server/kit/body.js';
import { chatTools } from './chat-tools.js';

/** vLLM's SamplingParams as its render routes serialize them, from the engine's own values. */
function samplingParams(prepared: ProcessedRequest, n: number): Record<string, unknown> {
  const { sampling, stop } = prepared.request;
  return {
    n,
    temperature: sampling.temperature,
    top_p: sampling.topP,
    top_k: sampling.topK,
    min_p: sampling.minP,
    presence_penalty: sampling.presencePenalty,
    frequency_penalty: sampling.frequencyPenalty,
    repetition_penalty: sampling.repetitionPenalty,
    seed: sampling.seed,
    stop: [...prepared.output.stop],
    stop_token_ids: [...stop.stopTokenIds],
    ignore_eos: stop.ignoreEos,
    max_tokens: stop.maxTokens,
    min_tokens: stop.minTokens,
    logprobs: sampling.logprobs ? sampling.topLogprobs : null,
    prompt_logprobs: prepared.request.promptLogprobs ?? null,
    logit_bias: sampling.logitBias,
    skip_special_tokens: prepared.output.skipSpecialTokens,
    include_stop_str_in_output: prepared.output.includeStopStrInOutput,
  };
}

/** One prepared prompt as vLLM's GenerateRequest. */
function generateRequest(requestId: string, requested: string, prepared: ProcessedRequest, body: Body, n: number): Record<string, unknown> {
  return {
    request_id: requestId,
    token_ids: [...prepared.request.promptTokenIds],
    features: null,
    sampling_params: samplingParams(prepared, n),
    model: requested,
    stream: body.stream === true,
    stream_options: body.stream === true && typeof body.stream_options === 'object' ? body.stream_options : null,
    // The client's salt, not the engine's namespace (which also separates model variants).
    cache_salt: typeof body.cache_salt === 'string' ? body.cache_salt : null,
    priority: prepared.request.priority,
    kv_transfer_params: null,
  };
}

/** The checks both generation routes run before preparing, in their order; the model the body names. */
function checkedModel(ctx: OpenAIContext, body: Body, fields: ReadonlySet<string>): { requested: string; model: LlmModel; n: number } {
  checkFields(body, fields);
  checkNoOps(body);
  const requested = requireModel(body);
  const model = ctx.llm(requested);
  streamSettings(body);
  return { requested, model, n: choiceCount(body) };
}

/** POST /v1/completions/render: one GenerateRequest per prompt, in prompt order. */
export async function renderCompletion(ctx: OpenAIContext, rawBody: unknown): Promise<unknown> {
  const body = requireObject(rawBody);
  const { requested, model, n } = checkedModel(ctx, body, COMPLETION_FIELDS);
  const candidates = candidateCount(body, n, body.stream === true);
  const echo = optionalFlag(body, 'echo', false);
  // Once per prompt: n and best_of repeat a prompt, they never change its tokens.
  const { choices } = await prepareAll(model, body, 1, echo ? logprobCount(body) : null, candidates > n);
  const id = `cmpl-${randomUUID().replaceAll('-', '')}`;
  return choices.map((prepared, i) => generateRequest(choices.length === 1 ? id : `${id}-${i}`, requested, prepared, body, n));
}

/** POST /v1/chat/completions/render: the conversation's one GenerateRequest. */
export async function renderChatCompletion(ctx: OpenAIContext, rawBody: unknown): Promise<unknown> {
  const body = requireObject(rawBody);
  const { requested, model, n } = checkedModel(ctx, body, CHAT_FIELDS);
  const tools = chatTools(body, model, requested);
  const [prepared] = await prepareChoices(model, chatInput(tools.body, tools.plan, tools.grammarParam), 1);
  return generateRequest(`chatcmpl-${randomUUID().replaceAll('-', '')}`, requested, prepared!, body, n);
}
