// The speculative_config model parameter: vLLM's --speculative-config JSON, of which the n-gram
// (prompt lookup) and draft_model methods are served. Read at load; anything else is refused
// naming the field.

import { readFile, realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { DraftModelSpeculativeConfig, NgramSpeculativeConfig } from '../contracts/engine-messages.js';
import { type ConfinementRoot, confinedPath, existingConfinedFile } from '../repository/confine.js';
import { invalidArg } from '../errors.js';
import { isObject } from '../vocabulary/json-object.js';

/** vLLM's prompt lookup length when neither bound is given. */
const DEFAULT_PROMPT_LOOKUP = 5;

/**
 * Tokens a step may feed for decoding before checking proposals is not worth it by default: past
 * it, a CPU step is bound by compute rather than by reading the weights, so the checked positions
 * cost about what they might save. disable_by_batch_size defaults to the sequences that fit it.
 */
const SPECULATIVE_STEP_TOKENS = 32;

/** The fields each method reads (vLLM's names); any other is refused, naming the field. */
const METHOD_FIELDS = {
  ngram: ['method', 'num_speculative_tokens', 'prompt_lookup_min', 'prompt_lookup_max', 'disable_by_batch_size'],
  draft_model: ['method', 'model', 'num_speculative_tokens', 'quantization', 'disable_by_batch_size'],
} as const;
type Method = keyof typeof METHOD_FIELDS;
const METHODS = Object.keys(METHOD_FIELDS) as Method[];

/**
 * Draft-model speculation as the parameter names it: the draft's directory (`model`, relative to
 * the version directory or absolute) and its precision variant (`quantization`, vLLM's field for
 * the draft's weights, taking Conveyor's variant names: fp32, fp16, int8, q4 …; absent: the
 * target's precision). The llm backend resolves them to a file (resolveDraftModel).
 */
export interface DraftModelParameter {
  readonly method: 'draft_model';
  readonly model: string;
  readonly quantization: string | undefined;
  readonly numSpeculativeTokens: number;
  readonly disableByBatchSize: number;
}

/** The parameter as read: n-gram lookup is complete; a draft model still names its directory. */
export type SpeculativeParameter = NgramSpeculativeConfig | DraftModelParameter;

/** The parameter's JSON text, checked; absent or empty: null (off). */
export function parseSpeculativeConfig(raw: string | undefined): SpeculativeParameter | null {
  if (raw === undefined || raw.trim() === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw invalidArg(`parameter speculative_config is not JSON: ${(error as Error).message}`);
  }
  if (!isObject(value)) throw invalidArg('parameter speculative_config must be a JSON object');
  const method = value['method'];
  if (typeof method !== 'string' || !(METHODS as string[]).includes(method)) {
    throw invalidArg(`parameter speculative_config: method must be "ngram" (prompt lookup) or "draft_model", got ${JSON.stringify(method ?? null)}`);
  }
  const fields: readonly string[] = METHOD_FIELDS[method as Method];
  for (const key of Object.keys(value)) {
    if (!fields.includes(key)) throw invalidArg(`parameter speculative_config: unknown field '${key}' for method ${method} (served: ${fields.join(', ')})`);
  }
  const count = (key: string, min: number): number | undefined => {
    const v = value[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw invalidArg(`parameter speculative_config: ${key} must be an integer ≥ ${min}, got ${JSON.stringify(v)}`);
    return v;
  };
  const text = (key: string): string | undefined => {
    const v = value[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string' || v.trim() === '') throw invalidArg(`parameter speculative_config: ${key} must be a non-empty string, got ${JSON.stringify(v)}`);
    return v;
  };
  const numSpeculativeTokens = count('num_speculative_tokens', 1);
  if (numSpeculativeTokens === undefined) throw invalidArg('parameter speculative_config: num_speculative_tokens is required');
  const disableByBatchSize = count('disable_by_batch_size', 1) ?? Math.max(1, Math.floor(SPECULATIVE_STEP_TOKENS / (numSpeculativeTokens + 1)));
  if (method === 'draft_model') {
    const model = text('model');
    if (model === undefined) throw invalidArg("parameter speculative_config: model (the draft model's directory) is required for method draft_model");
    return { method, model, quantization: text('quantization'), numSpeculativeTokens, disableByBatchSize };
  }
  const givenMin = count('prompt_lookup_min', 1);
  const givenMax = count('prompt_lookup_max', 1);
  const promptLookupMin = givenMin ?? givenMax ?? DEFAULT_PROMPT_LOOKUP;
  const promptLookupMax = givenMax ?? givenMin ?? DEFAULT_PROMPT_LOOKUP;
  if (promptLookupMin > promptLookupMax) throw invalidArg(`parameter speculative_config: prompt_lookup_min ${promptLookupMin} exceeds prompt_lookup_max ${promptLookupMax}`);
  return { method: 'ngram', numSpeculativeTokens, promptLookupMin, promptLookupMax, disableByBatchSize };
}

/**
 * A draft_model parameter resolved against the target's version directory: the draft's decoder
 * file, chosen by `chooseFile` as the target's is (its attention backend, the draft's precision),
 * after checking that the directory exists and that its tokenizer's vocabulary is the target's
 * token for token (proposals are token ids: another vocabulary would propose other text). Every
 * refusal names the field.
 */
export async function resolveDraftModel(
  parameter: DraftModelParameter,
  target: { readonly versionDir: string; readonly tokenizerPath: string },
  chooseFile: (draftRoot: ConfinementRoot, precision: string | undefined) => Promise<{ file: string; backend: string }>,
): Promise<DraftModelSpeculativeConfig> {
  const named = `parameter speculative_config: model '${parameter.model}'`;
  const dir = await draftDirectory(target.versionDir, parameter.model);
  if (dir === null) throw invalidArg(`${named} is not a directory (a path relative to the version directory, or absolute)`);
  const root = { dir, display: `speculative_config model '${parameter.model}'` };
  const tokenizer = await confinedPath(root, 'tokenizer.json', 'draft model file');
  if (!tokenizer.exists) throw invalidArg(`${named} has no tokenizer.json: a draft must share the target's tokenizer, and this one cannot be checked`);
  const difference = vocabularyDifference(await readFile(target.tokenizerPath, 'utf8'), await readFile(tokenizer.path, 'utf8'));
  if (difference) throw invalidArg(`${named}: its tokenizer's vocabulary differs from the target's (${difference}); a draft must share the target's tokenizer`);
  const variant = parameter.quantization ? ` (quantization ${parameter.quantization})` : '';
  const { file, backend, path } = await chooseFile(root, parameter.quantization)
    .then(async (chosen) => ({ ...chosen, path: (await existingConfinedFile(root, chosen.file, 'draft model file')).path }))
    .catch((error: unknown) => {
      throw invalidArg(`${named}${variant}: ${(error as Error).message}`);
    });
  if (backend === 'past_key_values') throw invalidArg(`${named}${variant} has no paged decoder (${file} has no model_paged*.onnx or segments beside it): a draft runs on the paged runners`);
  const { numSpeculativeTokens, disableByBatchSize } = parameter;
  return { method: 'draft_model', draftModelPath: path, numSpeculativeTokens, disableByBatchSize };
}

/**
 * The draft's directory: `model` resolved against the version directory as the repository shows
 * it, or, where that names no directory and the version directory is a link, against the
 * directory it links to (serve --model's generated repository links version 1 to the model
 * directory, beside which a user's draft lies); null where neither is a directory.
 */
export async function draftDirectory(versionDir: string, model: string): Promise<string | null> {
  const isDir = async (path: string): Promise<boolean> => (await stat(path).catch(() => null))?.isDirectory() ?? false;
  const lexical = resolve(versionDir, model);
  if (await isDir(lexical)) return lexical;
  const linked = resolve(await realpath(versionDir).catch(() => versionDir), model);
  return linked !== lexical && (await isDir(linked)) ? linked : null;
}

/** Where two tokenizer.json files' vocabularies differ (the model's vocab and the added tokens), or null where they are the same. */
export function vocabularyDifference(targetJson: string, draftJson: string): string | null {
  if (targetJson === draftJson) return null;
  const target = vocabularyOf(targetJson);
  const draft = vocabularyOf(draftJson);
  if (target.size !== draft.size) return `${draft.size} tokens against the target's ${target.size}`;
  for (const [token, id] of target) {
    const other = draft.get(token);
    if (other !== id) return `token ${JSON.stringify(token)} is id ${id} in the target's, ${other === undefined ? 'absent' : `id ${other}`} in the draft's`;
  }
  return null;
}

/** token → id over the model's vocabulary (BPE / WordPiece maps, Unigram lists) and the added tokens. */
function vocabularyOf(json: string): Map<string, number> {
  const parsed = JSON.parse(json) as { model?: { vocab?: Record<string, number> | [string, number][] }; added_tokens?: { id: number; content: string }[] };
  const vocabulary = new Map<string, number>();
  const vocab = parsed.model?.vocab ?? {};
  if (Array.isArray(vocab)) vocab.forEach(([piece], id) => vocabulary.set(piece, id));
  else for (const [token, id] of Object.entries(vocab)) vocabulary.set(token, id);
  for (const { id, content } of parsed.added_tokens ?? []) vocabulary.set(content, id);
  return vocabulary;
}
