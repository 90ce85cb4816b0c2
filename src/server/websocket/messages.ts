// The /v1/ws JSON protocol's messages (PROTOCOL.md): client messages parsed and checked into
// plain values, server messages built from engine events and errors. No socket here.

import { parseKeepAlive, type KeepAliveMs } from '../../serving/residency-policy.js';
import type { TokenLogprob } from '../../contracts/generate.js';
import type { GenerationEvent } from '../../contracts/text-generation.js';
import { asConveyorError, ConveyorError, ERROR_CATALOG, invalidArg } from '../../errors.js';
import { readWireParams, wireFieldNames, type WireVocabulary } from '../../vocabulary/index.js';
import type { GenerateInput } from '../../serving/llm-backend.js';
import { Overloaded } from '../../serving/admission.js';
import { isObject } from '../kit/body.js';

export const MAX_ID_LENGTH = 256;

export type ClientMessage =
  | { readonly type: 'generate'; readonly id: string; readonly model: string; readonly version?: string; readonly keepAliveMs?: KeepAliveMs; readonly input: GenerateInput }
  | { readonly type: 'cancel'; readonly id: string };

/** The generation parameters a generate message carries (src/vocabulary), under OpenAI's names; checked by the input processor. */
const WS_VOCABULARY: WireVocabulary = { omit: ['cache_salt', 'prompt_logprobs'], aliases: { max_completion_tokens: 'max_tokens' } };
const GENERATE_KEYS = new Set(['type', 'id', 'model', 'version', 'keep_alive', 'messages', 'prompt', 'chat_template_kwargs', 'add_special_tokens', ...wireFieldNames(WS_VOCABULARY)]);

/** A frame's JSON; `id` is whatever id could be read, so an error can name the generation it belongs to. */
export function parseClientMessage(text: string): ClientMessage {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalidArg(`the message is not valid JSON: ${(error as Error).message}`);
  }
  if (!isObject(value)) throw invalidArg('a message must be a JSON object with a "type"', 'type');
  const id = messageId(value);
  if (value['type'] === 'cancel') return { type: 'cancel', id };
  if (value['type'] === 'generate') return parseGenerate(value, id);
  throw invalidArg(`unknown message type ${JSON.stringify(value['type'])}; expected "generate" or "cancel"`, 'type');
}

/** The id of a message that failed to parse, when it has a usable one. */
export function peekId(text: string): string | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? messageId(value) : undefined;
  } catch {
    return undefined;
  }
}

function messageId(value: Record<string, unknown>): string {
  const id = value['id'];
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) throw invalidArg(`id must be a non-empty string of at most ${MAX_ID_LENGTH} characters`, 'id');
  return id;
}

function parseGenerate(value: Record<string, unknown>, id: string): ClientMessage {
  const unknown = Object.keys(value).filter((key) => !GENERATE_KEYS.has(key));
  if (unknown.length > 0) throw invalidArg(`unsupported field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`, unknown[0]);
  const { model, version, messages, prompt, keep_alive: keepAlive } = value;
  if (typeof model !== 'string' || model === '') throw invalidArg('model must be a non-empty string', 'model');
  if (version !== undefined && typeof version !== 'string') throw invalidArg('version must be a string', 'version');
  if ((messages === undefined) === (prompt === undefined)) throw invalidArg('send exactly one of messages (chat) or prompt (text or token ids)', messages === undefined ? 'prompt' : 'messages');
  // Ollama's keep_alive, as the HTTP routes read it from their bodies: how long the model stays loaded once this generation is done.
  const keepAliveMs = keepAlive === undefined || keepAlive === null ? undefined : parseKeepAlive(keepAlive, 'keep_alive');
  const input: GenerateInput = { prompt: promptOf(value), ...readWireParams(value, WS_VOCABULARY) };
  return { type: 'generate', id, model, ...(version ? { version } : {}), ...(keepAliveMs !== undefined ? { keepAliveMs } : {}), input };
}

function promptOf(value: Record<string, unknown>): GenerateInput['prompt'] {
  const { messages, prompt, chat_template_kwargs: kwargs, add_special_tokens: addSpecial } = value;
  if (messages !== undefined) {
    if (!Array.isArray(messages) || messages.length === 0 || !messages.every(isObject)) throw invalidArg('messages must be a non-empty array of {role, content} objects', 'messages');
    if (kwargs !== undefined && !isObject(kwargs)) throw invalidArg('chat_template_kwargs must be an object', 'chat_template_kwargs');
    return { kind: 'chat', messages: messages as never, ...(kwargs ? { chatTemplateKwargs: kwargs } : {}) };
  }
  if (addSpecial !== undefined && typeof addSpecial !== 'boolean') throw invalidArg('add_special_tokens must be a boolean', 'add_special_tokens');
  if (typeof prompt === 'string') return { kind: 'text', text: prompt, ...(addSpecial !== undefined ? { addSpecialTokens: addSpecial } : {}) };
  if (Array.isArray(prompt)) return { kind: 'tokens', tokenIds: prompt as number[] };
  throw invalidArg('prompt must be a string or an array of token ids', 'prompt');
}

// ---------------------------------------------------------------------------------------------
// Server → client

export function deltaMessage(id: string, event: GenerationEvent): Record<string, unknown> {
  const message: Record<string, unknown> = { type: 'delta', id, text: event.text, token_ids: event.tokenIds };
  if (event.logprobs) message['logprobs'] = event.logprobs.map(logprobJson);
  return message;
}

function logprobJson(entry: TokenLogprob): Record<string, unknown> {
  return { token_id: entry.tokenId, logprob: entry.logprob, top_logprobs: entry.top.map((t) => ({ token_id: t.tokenId, logprob: t.logprob })) };
}

export function doneMessage(id: string, event: GenerationEvent): Record<string, unknown> {
  const { promptTokens, completionTokens, cachedTokens } = event.usage;
  return {
    type: 'done',
    id,
    finish_reason: event.finishReason,
    stop_reason: event.stopReason,
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      prompt_tokens_details: { cached_tokens: cachedTokens },
    },
  };
}

/**
 * OpenAI's error object; `code` is OpenAI's string where it has one, else the catalog code in
 * lower case. Load shedding (Overloaded) adds `retry_after_ms` beside it: when to send the
 * generate again.
 */
export function errorMessage(error: unknown, id?: string): Record<string, unknown> {
  const conveyor = asConveyorError(error);
  const entry = ERROR_CATALOG[conveyor.code];
  const body = { message: conveyor.message, type: entry.openaiType, code: entry.openaiCode ?? conveyor.code.toLowerCase(), param: conveyor.param ?? null };
  const retry = conveyor instanceof Overloaded ? { retry_after_ms: conveyor.retryAfter.ms } : {};
  return id === undefined ? { type: 'error', error: body, ...retry } : { type: 'error', id, error: body, ...retry };
}

export const duplicateId = (id: string): ConveyorError =>
  new ConveyorError('ALREADY_EXISTS', `a generation with id '${id}' is still running on this socket; choose another id or wait for its done message`, 'id');
