// vLLM's token-in / token-out route, POST /inference/v1/generate, for RL and evaluation
// frameworks that keep their own tokenizer: the body is vLLM's GenerateRequest (what the render
// routes answer: token_ids, sampling_params as vLLM's SamplingParams, stream, stream_options,
// cache_salt, priority), the answer carries generated token ids, never text. The stop or EOS
// token that finished a choice is part of its token_ids (as vLLM returns it, so a trainer sees
// the token the model chose), with its logprob. Logprobs are chat's content entries spelled
// `token_id:<id>`. Errors are OpenAI's shape, a bad parameter named by its path
// (`sampling_params.top_p`, `token_ids`).

import type { FastifyReply } from 'fastify';
import { randomBytes } from 'node:crypto';
import type { GenerationEvent, ProcessedRequest } from '../src/contracts/text-generation.js';
import { invalidArg } from '../src/errors.js';
import { prepareChoices, runChoices } from '../src/server/kit/choices.js';
import { isObject, requireObject, type Body } from '../src/server/kit/body.js';
import { carriedFields, readWireParams, type UncheckedParams, type WireNames, type WireVocabulary } from '../src/vocabulary/index.js';
import type { OpenAIContext } from './context.js';
import { unknownParameter, unsupportedParameter } from './errors.js';
import { chatLogprobs, TOKEN_ID_SPELLING, type ChatTokenLogprob } from './logprobs.js';
import { vllmPromptLogprobs, type VllmPromptLogprobs } from './prompt-logprobs.js';
import { MAX_CHOICES, streamSettings } from './request-fields.js';
import { collectChoices, streamChoices } from './respond.js';
import { systemFingerprint, UsageTally } from './wire.js';

/** GenerateRequest's top-level fields. */
const REQUEST_FIELDS = new Set(['request_id', 'token_ids', 'features', 'sampling_params', 'model', 'stream', 'stream_options', 'cache_salt', 'priority', 'kv_transfer_params']);

/**
 * SamplingParams members that are vocabulary fields under their own names. vLLM's SamplingParams
 * has no OpenAI-only spellings (top_logprobs, response_format, guided_*), no reasoning budget, and
 * carries priority and cache_salt beside it, at the request's top level.
 */
const SAMPLING_VOCABULARY: WireVocabulary = {
  omit: ['top_logprobs', 'reasoning_effort', 'max_thinking_tokens', 'response_format', 'guided_json', 'guided_regex', 'guided_choice', 'guided_grammar', 'priority', 'cache_salt'],
};

/** Every vocabulary field as the client wrote it: inside sampling_params. */
const SAMPLING_NAMES: WireNames = Object.fromEntries(carriedFields(SAMPLING_VOCABULARY).map((field) => [field, `sampling_params.${field}`]));

const isEmpty = (v: unknown): boolean => v === null || (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0);
const isBoolean = (v: unknown): boolean => typeof v === 'boolean';

/**
 * SamplingParams members outside the vocabulary: each with the test its value must pass. The
 * accepted ones change nothing this route returns (no text is returned, so detokenization
 * settings do not matter; the route picks its own delivery); the others ask for what this server
 * lacks and pass only when they ask for nothing.
 */
const OTHER_SAMPLING: Readonly<Record<string, { readonly accepts: (v: unknown) => boolean; readonly supported: boolean }>> = {
  detokenize: { accepts: isBoolean, supported: true },
  spaces_between_special_tokens: { accepts: isBoolean, supported: true },
  flat_logprobs: { accepts: isBoolean, supported: true },
  output_kind: { accepts: (v) => typeof v === 'number' || typeof v === 'string', supported: true },
  logits_processors: { accepts: isEmpty, supported: false },
  truncate_prompt_tokens: { accepts: (v) => v === null, supported: false },
  allowed_token_ids: { accepts: (v) => v === null, supported: false },
  bad_words: { accepts: isEmpty, supported: false },
  extra_args: { accepts: isEmpty, supported: false },
};

interface GenerateSettings {
  readonly params: UncheckedParams;
  readonly n: number;
}

/** sampling_params read: the vocabulary's fields (checked when the prompt is prepared), n, and the rest refused or let pass by name. */
function samplingSettings(body: Body): GenerateSettings {
  const raw = body.sampling_params ?? {};
  if (!isObject(raw)) throw invalidArg('sampling_params must be an object', 'sampling_params');
  const known = new Set([...carriedFields(SAMPLING_VOCABULARY), 'n', 'best_of']);
  for (const [key, value] of Object.entries(raw)) {
    if (known.has(key) || value === undefined) continue;
    const other = Object.hasOwn(OTHER_SAMPLING, key) ? OTHER_SAMPLING[key] : undefined;
    if (other === undefined) throw unknownParameter(`sampling_params.${key}`);
    if (value === null || other.accepts(value)) continue;
    if (other.supported) throw invalidArg(`sampling_params.${key} has an invalid value: ${JSON.stringify(value)}`, `sampling_params.${key}`);
    throw unsupportedParameter(`sampling_params.${key}`);
  }
  const n = raw.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_CHOICES)
    throw invalidArg(`sampling_params.n must be an integer in [1, ${MAX_CHOICES}], got ${JSON.stringify(n)}`, 'sampling_params.n');
  // vLLM V1 has no best_of: only the value that asks for nothing beyond n passes.
  if (raw.best_of !== undefined && raw.best_of !== null && raw.best_of !== n) throw unsupportedParameter('sampling_params.best_of');
  const { sampling } = readWireParams(raw, SAMPLING_VOCABULARY);
  const scheduling = { ...(body.priority !== undefined ? { priority: body.priority } : {}), ...(body.cache_salt !== undefined ? { cache_salt: body.cache_salt } : {}) };
  return { params: { ...sampling, ...scheduling }, n };
}

function checkRequest(body: Body): void {
  for (const key of Object.keys(body)) if (!REQUEST_FIELDS.has(key)) throw unknownParameter(key);
  // Multimodal features and disaggregated KV transfer are vLLM deployments this server is not.
  if (body.features !== undefined && body.features !== null) throw unsupportedParameter('features');
  if (body.kv_transfer_params !== undefined && body.kv_transfer_params !== null) throw unsupportedParameter('kv_transfer_params');
  if (!Array.isArray(body.token_ids) || body.token_ids.length === 0) throw invalidArg('token_ids must be a non-empty array of token ids', 'token_ids');
  if (body.request_id !== undefined && (typeof body.request_id !== 'string' || body.request_id.length === 0)) throw invalidArg('request_id must be a non-empty string', 'request_id');
}

/** One choice's logprobs entries for an event: its tokens, then the stop token that finished it. */
function eventLogprobs(event: GenerationEvent): ChatTokenLogprob[] | null {
  if (event.logprobs === null) return null;
  return chatLogprobs(event.stopTokenLogprob ? [...event.logprobs, event.stopTokenLogprob] : event.logprobs, TOKEN_ID_SPELLING);
}

/** The event's token ids, with the EOS / stop token that finished the choice (output processing hides it from text). */
function eventTokenIds(event: GenerationEvent): number[] {
  const stopToken = event.finishReason === 'stop' && typeof event.stopReason === 'number' ? [event.stopReason] : [];
  return [...event.tokenIds, ...stopToken];
}

interface ChoiceAnswer {
  readonly tokenIds: number[];
  logprobs: ChatTokenLogprob[] | null;
  finishReason: string | null;
}

/** POST /inference/v1/generate. */
export async function generateTokens(ctx: OpenAIContext, rawBody: unknown, reply: FastifyReply, signal: AbortSignal): Promise<unknown> {
  const body = requireObject(rawBody);
  checkRequest(body);
  const model = ctx.llmOrOnly(body.model);
  const { stream, includeUsage } = streamSettings(body);
  const { params, n } = samplingSettings(body);
  const requestId = typeof body.request_id === 'string' ? body.request_id : randomBytes(16).toString('hex');
  const choices: ProcessedRequest[] = await prepareChoices(
    model,
    { prompt: { kind: 'tokens', tokenIds: body.token_ids as number[], param: 'token_ids' }, sampling: params, wireNames: SAMPLING_NAMES },
    n,
  );
  const events = runChoices(model, choices, signal);
  const usage = new UsageTally(n);
  const meta = { id: requestId, created: Math.floor(Date.now() / 1000), model: typeof body.model === 'string' ? body.model : model.name, system_fingerprint: systemFingerprint(model) };

  if (stream) {
    await streamChoices(reply, events, {
      meta,
      // vLLM's chunks always carry usage (null until the usage chunk).
      head: { request_id: requestId, usage: null },
      includeUsage,
      usage,
      sendTimeoutMs: ctx.options.streamSendTimeoutMs,
      keepAliveMs: ctx.options.sseKeepAliveMs,
      model,
      choice: (index, event) => {
        const tokenIds = eventTokenIds(event);
        if (tokenIds.length === 0 && event.finishReason === null) return null;
        const logprobs = eventLogprobs(event);
        return { index, logprobs: logprobs === null ? null : { content: logprobs }, finish_reason: event.finishReason, token_ids: tokenIds };
      },
    });
    return reply;
  }

  const answers: ChoiceAnswer[] = choices.map(() => ({ tokenIds: [], logprobs: null, finishReason: null }));
  let promptLogprobs: VllmPromptLogprobs | null = null;
  const promptCount = typeof params.prompt_logprobs === 'number' ? params.prompt_logprobs : null;
  await collectChoices(events, usage, (index, event) => {
    const answer = answers[index]!;
    answer.tokenIds.push(...eventTokenIds(event));
    const logprobs = eventLogprobs(event);
    if (logprobs !== null) answer.logprobs = [...(answer.logprobs ?? []), ...logprobs];
    answer.finishReason = event.finishReason;
    // The prompt's logprobs are the request's, the same in every choice: vLLM returns them once.
    if (index === 0 && event.promptLogprobs && promptCount !== null) promptLogprobs = vllmPromptLogprobs(event.promptLogprobs, ctx.tokenText(model), promptCount);
  });
  reply.header('x-request-id', requestId);
  return {
    request_id: requestId,
    choices: answers.map((answer, index) => ({
      index,
      logprobs: answer.logprobs === null ? null : { content: answer.logprobs },
      finish_reason: answer.finishReason ?? 'stop',
      token_ids: answer.tokenIds,
    })),
    prompt_logprobs: promptLogprobs,
    kv_transfer_params: null,
  };
}
