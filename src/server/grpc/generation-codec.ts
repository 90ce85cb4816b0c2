// conveyor.v1.GenerationService messages (protos/generate.proto) ↔ the engine's generation
// input and events. Pure functions over the proto-loader object shapes (keepCase, 64-bit integers
// as strings, enums as names, proto3 `optional` fields absent when unset).

import type { TokenLogprob } from '../../contracts/generate.js';
import type { GenerationEvent } from '../../contracts/text-generation.js';
import type { RawSamplingParams } from '../../vocabulary/sampling-params.js';
import { invalidArg } from '../../errors.js';
import type { GenerateInput } from '../../serving/llm-backend.js';
import type { WireLong } from './wire-types.js';

export interface WireSamplingParameters {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  repetition_penalty?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  max_tokens?: number;
  min_tokens?: number;
  seed?: WireLong;
  stop: string[];
  stop_token_ids: number[];
  ignore_eos?: boolean;
  include_stop_str_in_output?: boolean;
  skip_special_tokens?: boolean;
  logit_bias: Record<string, number>;
  logprobs?: boolean;
  top_logprobs?: number;
}

export interface WireChatMessage {
  role: string;
  content: string;
  name: string;
}

export interface WireGenerateRequest {
  model: string;
  model_version: string;
  request_id: string;
  text?: string;
  chat?: { messages: WireChatMessage[] };
  tokens?: { ids: number[] };
  /** Which prompt member is set, if any. */
  prompt?: 'text' | 'chat' | 'tokens';
  sampling: WireSamplingParameters | null;
}

interface WireTokenLogprob {
  token_id: number;
  logprob: number;
  top_logprobs: { token_id: number; logprob: number }[];
}

export interface WireDelta {
  text: string;
  token_ids: number[];
  logprobs: WireTokenLogprob[];
}

export type WireFinishReason = 'FINISH_REASON_STOP' | 'FINISH_REASON_LENGTH' | 'FINISH_REASON_ABORT';

export interface WireFinal {
  finish_reason: WireFinishReason;
  stop_string?: string;
  stop_token_id?: number;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; cached_tokens: number };
}

export interface WireGenerateResponse {
  request_id: string;
  delta?: WireDelta;
  final?: WireFinal;
}

export interface GenerateCall {
  readonly model: string;
  readonly version?: string;
  readonly input: GenerateInput;
}

export function generateCallFromWire(wire: WireGenerateRequest): GenerateCall {
  if (!wire.model) throw invalidArg('model is required', 'model');
  return {
    model: wire.model,
    ...(wire.model_version ? { version: wire.model_version } : {}),
    input: { prompt: promptFromWire(wire), sampling: samplingFromWire(wire.sampling) },
  };
}

function promptFromWire(wire: WireGenerateRequest): GenerateInput['prompt'] {
  switch (wire.prompt) {
    case 'text':
      return { kind: 'text', text: wire.text ?? '' };
    case 'chat':
      return { kind: 'chat', messages: (wire.chat?.messages ?? []).map(({ role, content, name }) => ({ role, content, ...(name ? { name } : {}) })) };
    case 'tokens':
      return { kind: 'tokens', tokenIds: wire.tokens?.ids ?? [] };
    default:
      throw invalidArg('a prompt is required: set text, chat or tokens', 'prompt');
  }
}

const SCALAR_FIELDS = [
  'temperature', 'top_p', 'top_k', 'min_p', 'repetition_penalty', 'frequency_penalty', 'presence_penalty',
  'max_tokens', 'min_tokens', 'ignore_eos', 'include_stop_str_in_output', 'skip_special_tokens', 'logprobs', 'top_logprobs',
] as const;

/** Unset fields stay absent so the model's defaults apply; empty lists and maps mean "none". */
export function samplingFromWire(wire: WireSamplingParameters | null): RawSamplingParams {
  if (!wire) return {};
  const out: Record<string, unknown> = {};
  for (const field of SCALAR_FIELDS) if (wire[field] !== undefined) out[field] = wire[field];
  // int64 arrives as a decimal string; an unsafe one stays a string so the validator names it.
  if (wire.seed !== undefined) out['seed'] = Number.isSafeInteger(Number(wire.seed)) ? Number(wire.seed) : wire.seed;
  if (wire.stop.length > 0) out['stop'] = wire.stop;
  if (wire.stop_token_ids.length > 0) out['stop_token_ids'] = wire.stop_token_ids;
  if (Object.keys(wire.logit_bias).length > 0) out['logit_bias'] = wire.logit_bias;
  return out as RawSamplingParams;
}

export function deltaToWire(requestId: string, event: GenerationEvent): WireGenerateResponse {
  return {
    request_id: requestId,
    delta: { text: event.text, token_ids: [...event.tokenIds], logprobs: (event.logprobs ?? []).map(logprobToWire) },
  };
}

function logprobToWire(entry: TokenLogprob): WireTokenLogprob {
  return { token_id: entry.tokenId, logprob: entry.logprob, top_logprobs: entry.top.map((t) => ({ token_id: t.tokenId, logprob: t.logprob })) };
}

const FINISH_REASONS = { stop: 'FINISH_REASON_STOP', length: 'FINISH_REASON_LENGTH', abort: 'FINISH_REASON_ABORT' } as const;

export function finalToWire(requestId: string, event: GenerationEvent): WireGenerateResponse {
  const { promptTokens, completionTokens, cachedTokens } = event.usage;
  const final: WireFinal = {
    finish_reason: FINISH_REASONS[event.finishReason ?? 'abort'],
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens, cached_tokens: cachedTokens },
  };
  if (event.finishReason === 'stop' && typeof event.stopReason === 'string') final.stop_string = event.stopReason;
  if (event.finishReason === 'stop' && typeof event.stopReason === 'number') final.stop_token_id = event.stopReason;
  return { request_id: requestId, final };
}
