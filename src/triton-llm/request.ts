// A Triton-style LLM request (the tensors and parameters Triton's vLLM backend accepts) read into
// one plain shape, whether it came as ModelStreamInfer tensors or as a generate-extension JSON
// body. Inputs: text_input, stream, max_tokens, exclude_input_in_output, sampling_parameters and
// the return_* switches. Request parameters carry the vLLM sampling fields; their values may be
// strings (gRPC clients often send every parameter as one), which are converted here so that
// the sampling validator sees numbers and reports ranges with the parameter's name.

import type { Parameters } from '../contracts/infer.js';
import type { Tensor } from '../contracts/tensors.js';
import { LLM_INPUT_TENSORS, type LlmInputName } from '../contracts/triton-llm-tensors.js';
import { invalidArg } from '../errors.js';
import { carriedFields, valueKind, type GenerationField, type UncheckedParams, type ValueKind, type WireVocabulary } from '../vocabulary/index.js';
import { setOwnEntry } from '../contracts/own-entry.js';

const KIND_OF_TYPE = { TYPE_STRING: 'string', TYPE_BOOL: 'bool', TYPE_INT32: 'int' } as const satisfies Record<string, ValueKind>;

export type TritonInputName = LlmInputName;

/** The inputs an LLM request may carry, by the kind of value each holds: derived from the one declaration of the LLM's tensors. */
export const TRITON_LLM_INPUTS: Readonly<Record<TritonInputName, ValueKind>> = Object.fromEntries(LLM_INPUT_TENSORS.map((t) => [t.name, KIND_OF_TYPE[t.data_type]])) as Record<
  TritonInputName,
  ValueKind
>;

/** Own keys only: `key in` would also take 'constructor', 'toString' and '__proto__' for inputs. */
export const isTritonInput = (key: string): key is TritonInputName => Object.hasOwn(TRITON_LLM_INPUTS, key);
/** Each input's single element, as received (checked and converted by buildTritonLlmRequest). */
export type TritonInputValues = Partial<Record<TritonInputName, unknown>>;

/**
 * The generation parameters (src/vocabulary) under vLLM's names; Triton's vLLM backend has no
 * logprobs and no OpenAI response_format, priority is a reserved parameter, and the backend's
 * older `guided_decoding` (a GuidedDecodingParams object) is another name for structured_outputs.
 * Its output goes back as generated, never split into reasoning, so it takes no reasoning fields.
 */
const TRITON_VOCABULARY: WireVocabulary = {
  omit: ['logprobs', 'top_logprobs', 'prompt_logprobs', 'priority', 'cache_salt', 'response_format', 'reasoning_effort', 'max_thinking_tokens'],
  aliases: { guided_decoding: 'structured_outputs' },
};
const ALIASES: Readonly<Record<string, GenerationField>> = TRITON_VOCABULARY.aliases ?? {};
const SAMPLING_FIELDS: readonly GenerationField[] = carriedFields(TRITON_VOCABULARY);
const isSamplingField = (key: string): key is GenerationField => (SAMPLING_FIELDS as readonly string[]).includes(key);

/** Triton's reserved request parameters: they steer the server, not sampling. */
const RESERVED_PARAMETERS = new Set(['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'headers', 'binary_data_output']);

export interface TritonLlmRequest {
  readonly model: string;
  readonly version?: string;
  readonly id?: string;
  readonly prompt: string;
  /** One response per engine step; otherwise one response with the whole text. */
  readonly stream: boolean;
  /** The vLLM backend prepends the prompt to a non-streamed text_output unless this is set. */
  readonly excludeInputInOutput: boolean;
  readonly sampling: UncheckedParams;
  readonly returnFinishReason: boolean;
  readonly returnNumInputTokens: boolean;
  readonly returnNumOutputTokens: boolean;
}

export interface RequestRef {
  readonly model: string;
  readonly version?: string;
  readonly id?: string;
}

/** Reads the LLM inputs of an inference request; a tensor must hold exactly one element. */
export function tritonInputsFromTensors(inputs: readonly Tensor[]): TritonInputValues {
  const values: TritonInputValues = {};
  for (const tensor of inputs) {
    if (!isTritonInput(tensor.name)) {
      throw invalidArg(`unexpected inference input '${tensor.name}'; this model accepts ${Object.keys(TRITON_LLM_INPUTS).join(', ')}`);
    }
    const count = tensor.shape.reduce((a, b) => a * b, 1);
    if (count !== 1) throw invalidArg(`input '${tensor.name}' must hold exactly one element (shape [1]), got shape [${tensor.shape.join(', ')}]`);
    values[tensor.name as TritonInputName] = firstElement(tensor);
  }
  return values;
}

function firstElement(tensor: Tensor): unknown {
  const { data, datatype } = tensor;
  if (Array.isArray(data)) return Buffer.from(data[0]!).toString('utf8');
  const value = (data as ArrayLike<number | bigint>)[0];
  if (datatype === 'BOOL') return value !== 0;
  if (datatype === 'FP16' || datatype === 'BF16') throw invalidArg(`input '${tensor.name}': ${datatype} is not accepted here`);
  return typeof value === 'bigint' ? Number(value) : value;
}

export function buildTritonLlmRequest(ref: RequestRef, inputs: TritonInputValues, parameters: Parameters | Readonly<Record<string, unknown>>): TritonLlmRequest {
  const fromParameters: TritonInputValues = {};
  const raw: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parameters)) {
    if (key.startsWith('triton_') || RESERVED_PARAMETERS.has(key)) continue;
    // The vLLM backend's examples put stream in parameters; honour it where no tensor says otherwise.
    if (isTritonInput(key) && !isSamplingField(key)) setOwnEntry(fromParameters, key, value);
    else setOwnEntry(raw, key, value);
  }
  const merged = { ...fromParameters, ...inputs };
  const value = <N extends TritonInputName>(name: N) => convert(merged[name], TRITON_LLM_INPUTS[name], name);
  const prompt = value('text_input');
  if (typeof prompt !== 'string') throw invalidArg("input 'text_input' (BYTES, shape [1]) is required and must be a string", 'text_input');
  const stream = flag(value('stream'), 'stream');
  const exclude = merged.exclude_input_in_output === undefined ? stream : flag(value('exclude_input_in_output'), 'exclude_input_in_output');
  if (stream && !exclude) throw invalidArg('when streaming, exclude_input_in_output = false is not allowed', 'exclude_input_in_output');
  // Like the vLLM backend, a sampling_parameters tensor (JSON) replaces the request parameters.
  const samplingSource = merged.sampling_parameters === undefined ? raw : samplingFromJson(value('sampling_parameters'));
  const sampling = samplingParams(samplingSource);
  const maxTokens = value('max_tokens');
  return {
    ...ref,
    prompt,
    stream,
    excludeInputInOutput: exclude,
    sampling: maxTokens === undefined ? sampling : { ...sampling, max_tokens: maxTokens },
    returnFinishReason: flag(value('return_finish_reason'), 'return_finish_reason'),
    returnNumInputTokens: flag(value('return_num_input_tokens'), 'return_num_input_tokens'),
    returnNumOutputTokens: flag(value('return_num_output_tokens'), 'return_num_output_tokens'),
  };
}

function flag(value: unknown, name: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw invalidArg(`${name} must be a boolean`, name);
  return value;
}

function samplingFromJson(text: unknown): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(text));
  } catch (error) {
    throw invalidArg(`sampling_parameters is not valid JSON: ${(error as Error).message}`, 'sampling_parameters');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalidArg('sampling_parameters must be a JSON object', 'sampling_parameters');
  return parsed as Record<string, unknown>;
}

/** vLLM sampling fields with their values converted; anything else is refused by name, never ignored. */
export function samplingParams(raw: Readonly<Record<string, unknown>>): UncheckedParams {
  const out: { [F in GenerationField]?: unknown } = {};
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const field = isSamplingField(key) ? key : Object.hasOwn(ALIASES, key) ? ALIASES[key]! : undefined;
    if (field !== undefined) out[field] = convert(value, valueKind(field), key);
    else unknown.push(key);
  }
  if (unknown.length > 0) {
    throw invalidArg(`unsupported parameter${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')} (supported: ${[...SAMPLING_FIELDS, ...Object.keys(ALIASES)].join(', ')})`, unknown[0]);
  }
  return out;
}

/**
 * Brings a value to its kind where the conversion is unambiguous (numeric strings, "true"/"false",
 * JSON text for lists and maps, bigints); anything else passes through for the validator to refuse.
 */
function convert(value: unknown, kind: ValueKind, name: string): unknown {
  if (value === undefined || value === null) return undefined;
  switch (kind) {
    case 'number':
    case 'int':
      if (typeof value === 'bigint') return Number(value);
      if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
      return value;
    case 'bool':
      if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
      return value;
    case 'ints':
    case 'object':
      return typeof value === 'string' ? parseJsonText(value, name) : value;
    case 'strings':
      // A plain string is one stop string; JSON array text is a list of them.
      return typeof value === 'string' && value.startsWith('[') ? (tryJson(value) ?? value) : value;
    case 'string':
      return value;
  }
}

function parseJsonText(text: string, name: string): unknown {
  const parsed = tryJson(text);
  if (parsed === undefined) throw invalidArg(`${name} must be JSON (a list or an object), got ${JSON.stringify(text.slice(0, 40))}`, name);
  return parsed;
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
