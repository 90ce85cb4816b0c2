// An "llm" model's config.pbtxt parameters, read and checked: each parameter vLLM names on its
// command line (scheduling_policy, tool_call_parser, reasoning_parser, attention_backend,
// kv_cache_dtype, speculative_config, kv_events_config) and the decoder file the version loads.
// A bad value is a load error naming the parameter and what it may be.

import { hostname } from 'node:os';
import type { KvEventsConfig } from '../contracts/kv-events.js';
import { KV_CACHE_DTYPES, type KvCacheDtype, type SpeculativeConfig } from '../contracts/engine-messages.js';
import type { ModelConfig } from '../contracts/model-config.js';
import { pagedSegmentsDir } from '../contracts/paged-segments.js';
import { parseSpeculativeConfig, resolveDraftModel } from './speculative-config.js';
import { defaultKvEventsTopic, parseKvEventsConfig } from '../kv-events/config.js';
import { confinedPath, type ConfinementRoot } from '../repository/confine.js';
import { ATTENTION_BACKENDS, type AttentionBackend, pagedVariantFile, presentVariantFile } from '../repository/variants.js';
import { invalidArg } from '../errors.js';
import type { SchedulingPolicy } from '../contracts/generate.js';
import type { BackendLoadRequest } from './served-model.js';
import { detectToolCallParser, isToolCallParserName, TOOL_CALL_FORMATS, type ToolCallParserName } from '../tool-calls/index.js';
import { isReasoningParserName, REASONING_FORMATS, type ReasoningParserName } from '../reasoning/index.js';

export function parameter(config: ModelConfig, key: string): string | undefined {
  return config.parameters[key]?.string_value;
}

export function positiveInt(config: ModelConfig, key: string, fallback: number): number {
  const raw = parameter(config, key);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw invalidArg(`parameter ${key} must be a positive integer, got '${raw}'`);
  return value;
}

/** The `scheduling_policy` choices; the Record makes the compiler insist on every SchedulingPolicy. */
const SCHEDULING_POLICIES: Record<SchedulingPolicy, true> = { fcfs: true, priority: true };

const isSchedulingPolicy = (raw: string): raw is SchedulingPolicy => Object.hasOwn(SCHEDULING_POLICIES, raw);

/** vLLM's --scheduling-policy: fcfs (the default) or priority. */
export function schedulingPolicy(config: ModelConfig): SchedulingPolicy {
  const raw = parameter(config, 'scheduling_policy') ?? 'fcfs';
  if (isSchedulingPolicy(raw)) return raw;
  throw invalidArg(`parameter scheduling_policy must be ${Object.keys(SCHEDULING_POLICIES).join(' or ')}, got '${raw}'`);
}

/**
 * vLLM's --tool-call-parser: how this model writes tool calls (a TOOL_CALL_FORMATS name, or auto:
 * the one its chat template shows, `chatTemplate`); absent or none found, tool_choice auto is refused.
 */
export function toolCallParserOf(config: ModelConfig, chatTemplate: string | null = null): ToolCallParserName | null {
  const raw = parameter(config, 'tool_call_parser');
  if (raw === undefined || raw === '') return null;
  if (raw === 'auto') return detectToolCallParser(chatTemplate);
  if (isToolCallParserName(raw)) return raw;
  throw invalidArg(`parameter tool_call_parser must be one of auto, ${Object.keys(TOOL_CALL_FORMATS).join(', ')}, got '${raw}'`);
}

/** vLLM's --reasoning-parser: how this model marks its thinking block (qwen3, deepseek_r1); absent, output has no reasoning part. */
export function reasoningParserOf(config: ModelConfig): ReasoningParserName | null {
  const raw = parameter(config, 'reasoning_parser');
  if (raw === undefined || raw === '') return null;
  if (isReasoningParserName(raw)) return raw;
  throw invalidArg(`parameter reasoning_parser must be one of ${Object.keys(REASONING_FORMATS).join(', ')}, got '${raw}'`);
}

/** A parameter that names one of `choices`; absent or empty, the first; anything else refused listing them. */
function choiceParameter<T extends string>(config: ModelConfig, name: string, choices: readonly T[]): T {
  const raw = parameter(config, name);
  if (raw === undefined || raw === '') return choices[0]!;
  const choice = choices.find((c) => c === raw);
  if (choice) return choice;
  throw invalidArg(`parameter ${name} must be one of ${choices.join(', ')}, got '${raw}'`);
}

/**
 * The attention_backend the model's parameters name (past_key_values, paged, paged_onnx), or null
 * when they name none: the load then takes the fastest one the version's files allow
 * (llmModelFile).
 */
export function attentionBackendOf(config: ModelConfig): AttentionBackend | null {
  const raw = parameter(config, 'attention_backend');
  return raw === undefined || raw === '' ? null : choiceParameter(config, 'attention_backend', ATTENTION_BACKENDS);
}

/** The decoder file a version loads and the attention backend it runs, and whether the parameters named it or it is the default. */
export interface LlmModelFile {
  readonly file: string;
  readonly backend: AttentionBackend;
  readonly chosenBy: 'parameter' | 'default';
}

/**
 * The decoder under the version's onnx/: the variant `precision` (fp32 when absent) chooses; with
 * attention_backend paged, the segmented paged decoder beside it where present (the native
 * kernel's; the engine falls back to the paged graph where the kernel cannot load), else the paged
 * graph; with paged_onnx, the paged graph. Without attention_backend, the fastest the files allow
 * (measured: the native kernel 1.06–1.39× llama-server at 2,048-token prompts, past_key_values
 * 0.64–0.99×): paged where the variant has a paged graph or its segments, else past_key_values.
 */
export async function llmModelFile(config: ModelConfig, versionRoot: ConfinementRoot): Promise<LlmModelFile> {
  const precision = parameter(config, 'precision') ?? 'fp32';
  const exists = async (path: string): Promise<boolean> => (await confinedPath(versionRoot, path, 'model file')).exists;
  const named = attentionBackendOf(config);
  const optimumFile = await presentVariantFile(precision, async (name) => (await exists(`onnx/${name}`)) || (named !== 'past_key_values' && (await pagedFilesExist(`onnx/${name}`, exists))));
  const pagedFile = `onnx/${pagedVariantFile(optimumFile)}`;
  const segments = pagedSegmentsDir(pagedFile);
  const backend = named ?? ((await pagedFilesExist(`onnx/${optimumFile}`, exists)) ? 'paged' : 'past_key_values');
  const chosenBy = named === null ? 'default' : 'parameter';
  if (backend === 'past_key_values') return { file: `onnx/${optimumFile}`, backend, chosenBy };
  if (backend === 'paged' && (await exists(segments))) return { file: segments, backend, chosenBy };
  return { file: pagedFile, backend, chosenBy };
}

/** Whether the paged graph of an Optimum file, or the segments cut from it, is present. */
async function pagedFilesExist(optimumFile: string, exists: (path: string) => Promise<boolean>): Promise<boolean> {
  const pagedFile = `onnx/${pagedVariantFile(optimumFile.slice('onnx/'.length))}`;
  return (await exists(pagedFile)) || (await exists(pagedSegmentsDir(pagedFile)));
}

/** vLLM's --kv-cache-dtype: auto (the default) keeps the model's float type; fp16 halves a float32 model's KV bytes, int8 quarters them (native paged attention only). */
export function kvCacheDtypeOf(config: ModelConfig): KvCacheDtype {
  return choiceParameter(config, 'kv_cache_dtype', KV_CACHE_DTYPES);
}

/** The engine's KV block pool, bytes (the kv_cache_bytes parameter; 256 MiB when absent). */
export function kvCacheBytesOf(config: ModelConfig): number {
  return positiveInt(config, 'kv_cache_bytes', 256 * 2 ** 20);
}

/**
 * The speculative_config parameter for the engine, or null when off. A draft model's directory is
 * resolved against the version directory and its decoder chosen as the target's is (the same
 * attention_backend; its precision from the parameter's quantization, else the target's).
 */
export async function speculativeConfigOf(config: ModelConfig, versionDir: string, tokenizer: { path: string; exists: boolean }): Promise<SpeculativeConfig | null> {
  const parsed = parseSpeculativeConfig(parameter(config, 'speculative_config'));
  if (parsed?.method !== 'draft_model') return parsed;
  if (!tokenizer.exists) throw invalidArg("parameter speculative_config: method draft_model needs the model's tokenizer.json, to check that the draft shares it");
  return resolveDraftModel(parsed, { versionDir, tokenizerPath: tokenizer.path }, (root, precision) => llmModelFile(withPrecision(config, precision), root));
}

/** `config` with its precision parameter set to `precision` (a draft model's file is chosen as the target's is, with the draft's precision); absent: as it is. */
export function withPrecision(config: ModelConfig, precision: string | undefined): ModelConfig {
  return precision === undefined ? config : { ...config, parameters: { ...config.parameters, precision: { string_value: precision } } };
}

/**
 * The kv_events_config parameter (vLLM's --kv-events-config JSON), or null when off. Its topic
 * defaults to kv@<host>:<port>@<model>, the serving address as configured (a wildcard host is
 * replaced by this machine's name), so every engine of the server publishes under its own topic.
 */
export function kvEventsOf(config: ModelConfig, request: BackendLoadRequest): KvEventsConfig | null {
  const address = request.servingAddress ?? { host: '0.0.0.0', port: 0 };
  const host = address.host === '0.0.0.0' || address.host === '::' || address.host === '' ? hostname() : address.host;
  try {
    return parseKvEventsConfig(parameter(config, 'kv_events_config'), defaultKvEventsTopic(host, address.port, request.name));
  } catch (error) {
    throw invalidArg((error as Error).message);
  }
}
