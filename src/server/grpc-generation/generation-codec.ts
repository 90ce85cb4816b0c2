// conveyor.v1.GenerationService messages (protos/generate.proto) ↔ the engine's generation
// input and events. Pure functions over the proto-loader object shapes (keepCase, 64-bit integers
// as strings, enums as names, proto3 `optional` fields absent when unset).

import type { TokenLogprob } from '../../contracts/generate.js';
import type { GenerationEvent } from '../../contracts/text-generation.js';
import { invalidArg } from '../../errors.js';
import { carriedFields, type GenerationField, type UncheckedParams, type WireVocabulary } from '../../vocabulary/index.js';
import type { GenerateInput } from '../../serving/llm-backend.js';
import type { WireLong } from '../kit/grpc/wire-types.js';

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
  structured_outputs?: WireStructuredOutputs | null;
}

/** StructuredOutputs: proto-loader names the set oneof member in `constraint` (oneofs: true) and leaves the others absent. */
export interface WireStructuredOutputs {
  constraint?: 'json' | 'regex' | 'choice' | 'grammar' | 'json_object';
  json?: string;
  regex?: string;
  choice?: { choices: string[] } | null;
  grammar?: string;
  json_object?: boolean;
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

/**
 * The generation parameters (src/vocabulary) under their own names; SamplingParameters has no
 * scheduling extras, and takes structured outputs in one message (structured_outputs) rather
 * than under OpenAI's and vLLM's older names as well. Its output goes back as generated, never
 * split into reasoning and answer, so it takes no reasoning fields.
 */
export const GRPC_VOCABULARY: WireVocabulary = {
  omit: ['priority', 'cache_salt', 'prompt_logprobs', 'response_format', 'guided_json', 'guided_regex', 'guided_choice', 'guided_grammar', 'reasoning_effort', 'max_thinking_tokens'],
};
const GRPC_FIELDS: ReadonlySet<string> = new Set(carriedFields(GRPC_VOCABULARY));
const isGrpcField = (key: string): key is GenerationField => GRPC_FIELDS.has(key);

/** proto3 cannot tell an empty repeated field or map from an unset one: both mean "none". */
const isEmpty = (value: unknown): boolean => (Array.isArray(value) ? value.length === 0 : typeof value === 'object' && value !== null && Object.keys(value).length === 0);

/** Unset fields stay absent so the model's defaults apply; empty lists and maps mean "none". */
export function samplingFromWire(wire: WireSamplingParameters | null): UncheckedParams {
  if (!wire) return {};
  const out: { [F in GenerationField]?: unknown } = {};
  // Own fields of the message only: proto-loader adds virtual oneof members (`_temperature`) beside them.
  for (const [key, value] of Object.entries(wire)) if (isGrpcField(key) && value !== undefined && !isEmpty(value)) out[key] = value;
  // int64 arrives as a decimal string; an unsafe one stays a string so the validator names it.
  if (wire.seed !== undefined) out.seed = Number.isSafeInteger(Number(wire.seed)) ? Number(wire.seed) : wire.seed;
  const constraint = structuredOutputsFromWire(wire.structured_outputs);
  if (constraint === undefined) delete out.structured_outputs;
  else out.structured_outputs = constraint;
  return out;
}

/** The set oneof member as vLLM's structured_outputs object (choice's list unwrapped); unset: none. */
function structuredOutputsFromWire(wire: WireStructuredOutputs | null | undefined): Record<string, unknown> | undefined {
  const member = wire?.constraint;
  if (!wire || member === undefined) return undefined;
  return { [member]: member === 'choice' ? (wire.choice?.choices ?? []) : wire[member] };
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
