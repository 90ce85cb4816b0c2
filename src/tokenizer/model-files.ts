// The Hugging Face model-directory files (tokenizer.json, tokenizer_config.json,
// generation_config.json, config.json, optionally chat_template.jinja), the tokenizer built from
// them and the facts derived from them: vocabulary size, EOS ids, context length, special tokens
// and the generation_config sampling defaults. Read on the main thread (the input processor, the
// encoders' tokenizers) and in the tokenizer worker, which builds its own copy of the tokenizer.

import { existsSync } from 'node:fs';
import { readFile, realpath, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import type { TextTokenizer } from '../contracts/tokenizer.js';
import type { SamplingDefaults } from '../vocabulary/sampling-params.js';

/** A special token in tokenizer_config.json: a plain string or a serialized AddedToken. */
type SpecialTokenField = string | { readonly content?: string } | null | undefined;

export interface TokenizerConfig {
  readonly chat_template?: string | readonly { readonly name: string; readonly template: string }[] | null;
  readonly bos_token?: SpecialTokenField;
  readonly eos_token?: SpecialTokenField;
  readonly pad_token?: SpecialTokenField;
  readonly unk_token?: SpecialTokenField;
  readonly model_max_length?: number;
  readonly [key: string]: unknown;
}

export interface ModelFiles {
  readonly tokenizerJson: object;
  readonly tokenizerConfig: TokenizerConfig;
  /** generation_config.json; null when the directory has none. */
  readonly generationConfig: Readonly<Record<string, unknown>> | null;
  /** config.json; null when the directory has none. */
  readonly config: Readonly<Record<string, unknown>> | null;
  /** chat_template.jinja, which newer exports keep beside tokenizer_config.json. */
  readonly chatTemplateFile: string | null;
}

export interface SpecialTokens {
  readonly bos_token: string | null;
  readonly eos_token: string | null;
  readonly pad_token: string | null;
  readonly unk_token: string | null;
}

export interface ModelInfo {
  /** Most tokens (prompt + output) per sequence. */
  readonly contextLength: number;
  /** End-of-sequence ids, generation_config.json's first, then the tokenizer's eos_token. */
  readonly eosTokenIds: readonly number[];
  /** Tokenizer ids are 0..vocabSize − 1 (added tokens included); anything else is unknown. */
  readonly vocabSize: number;
  /** Logits row length (config.json vocab_size); ≥ vocabSize when the embedding is padded. */
  readonly modelVocabSize: number;
  readonly specialTokens: SpecialTokens;
  readonly samplingDefaults: SamplingDefaults;
}

/** Every file readModelFiles() may read from a model directory. */
export const MODEL_FILE_NAMES = ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'config.json', 'chat_template.jinja'] as const;

async function readJson(path: string): Promise<Record<string, unknown>> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    // An errno message quotes the absolute path; its code says enough.
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code !== undefined ? code : error instanceof Error ? error.message : String(error);
    throw new Error(`cannot read ${basename(path)}: ${reason}`);
  }
}

async function readOptionalJson(path: string): Promise<Record<string, unknown> | null> {
  return existsSync(path) ? readJson(path) : null;
}

async function readModelFilesUncached(dir: string): Promise<ModelFiles> {
  const templatePath = join(dir, 'chat_template.jinja');
  const [tokenizerJson, tokenizerConfig, generationConfig, config, chatTemplateFile] = await allInOrder([
    readJson(join(dir, 'tokenizer.json')),
    readJson(join(dir, 'tokenizer_config.json')),
    readOptionalJson(join(dir, 'generation_config.json')),
    readOptionalJson(join(dir, 'config.json')),
    existsSync(templatePath) ? readFile(templatePath, 'utf8') : Promise.resolve(null),
  ]);
  return { tokenizerJson, tokenizerConfig: tokenizerConfig as TokenizerConfig, generationConfig, config, chatTemplateFile };
}

/**
 * The promises' values, read together; a failure reported in their order, so with several files
 * missing the one named is the same every time (Promise.all reports whichever failed first).
 */
async function allInOrder<T extends readonly unknown[]>(promises: readonly [...{ [K in keyof T]: Promise<T[K]> }]): Promise<T> {
  const settled = await Promise.allSettled(promises);
  for (const result of settled) if (result.status === 'rejected') throw result.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/**
 * What makes two reads of a model directory the same: each file's real path, size and mtime.
 * Versions and precision variants of one model link or copy the same tokenizer files; a changed
 * file changes its stamp. Null when a file cannot be stat'ed (the uncached read reports why).
 */
async function filesStamp(dir: string): Promise<string | null> {
  try {
    const parts = await Promise.all(
      MODEL_FILE_NAMES.map(async (name) => {
        const path = join(dir, name);
        if (!existsSync(path)) return `${name}:-`;
        const [real, info] = await Promise.all([realpath(path), stat(path)]);
        return `${real}:${info.size}:${info.mtimeMs}`;
      }),
    );
    return parts.join('|');
  } catch {
    return null;
  }
}

// Parsing Qwen3's 11 MB tokenizer.json and building its tokenizer takes ~0.8 s of the main
// thread; a precision swap, an on-demand reload or a second version of the same model would pay
// it again while streams are running. Entries are held weakly: they live as long as a loaded
// model holds them, and an unloaded model's tokenizer is garbage like any other.
const filesCache = new Map<string, WeakRef<ModelFiles>>();
const tokenizers = new WeakMap<ModelFiles, TextTokenizer>();
const forget = new FinalizationRegistry<string>((stamp) => {
  if (filesCache.get(stamp)?.deref() === undefined) filesCache.delete(stamp);
});

/** The model directory's files, parsed; the same object for a directory whose files have not changed while it is in use. */
export async function readModelFiles(dir: string): Promise<ModelFiles> {
  const stamp = await filesStamp(dir);
  const cached = stamp === null ? undefined : filesCache.get(stamp)?.deref();
  if (cached) return cached;
  const files = await readModelFilesUncached(dir);
  if (stamp !== null) {
    filesCache.set(stamp, new WeakRef(files));
    forget.register(files, stamp);
  }
  return files;
}

/** The tokenizer of `files`; built once per files object (see readModelFiles). */
export function createTokenizer(files: Pick<ModelFiles, 'tokenizerJson' | 'tokenizerConfig'>): TextTokenizer {
  const known = tokenizers.get(files as ModelFiles);
  if (known) return known;
  const tokenizer = new Tokenizer(files.tokenizerJson, files.tokenizerConfig) as TextTokenizer;
  tokenizers.set(files as ModelFiles, tokenizer);
  return tokenizer;
}

function tokenText(field: SpecialTokenField): string | null {
  if (typeof field === 'string') return field;
  return field && typeof field.content === 'string' ? field.content : null;
}

/** An int or a list of ints (generation_config's eos_token_id may be either). */
function idList(value: unknown): number[] {
  const list = Array.isArray(value) ? value : [value];
  return list.filter((v): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0);
}

function positiveNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}

// Names under which configs state their positional limit, in vLLM's order of preference.
const CONTEXT_KEYS = ['max_position_embeddings', 'n_positions', 'max_seq_len', 'seq_length', 'max_sequence_length', 'n_ctx'];
// transformers' "no limit" sentinel for model_max_length is 1e30-ish; anything that large is not a limit.
const NO_LIMIT = 1e12;

/**
 * The context length a model's files state, and where: config.json's positional limit (the first
 * of CONTEXT_KEYS), else tokenizer_config.json's model_max_length; undefined when neither says.
 */
export function statedContextLength(files: Pick<ModelFiles, 'config'> & { readonly tokenizerConfig: { readonly model_max_length?: unknown } }): { length: number; source: string } | undefined {
  const key = CONTEXT_KEYS.find((k) => positiveNumber(files.config?.[k]) !== undefined);
  if (key !== undefined) return { length: positiveNumber(files.config?.[key])!, source: `config.json ${key}` };
  const fromTokenizer = positiveNumber(files.tokenizerConfig.model_max_length);
  return fromTokenizer !== undefined && fromTokenizer < NO_LIMIT ? { length: fromTokenizer, source: 'tokenizer_config.json model_max_length' } : undefined;
}

function contextLength(files: ModelFiles, override: number | undefined): number {
  const derived = statedContextLength(files)?.length;
  if (override !== undefined) {
    if (derived !== undefined && override > derived) throw new Error(`max_model_len ${override} exceeds the model's context length ${derived}`);
    return override;
  }
  if (derived === undefined) throw new Error('cannot determine the context length: config.json has no max_position_embeddings and tokenizer_config.json no model_max_length');
  return Math.floor(derived);
}

function samplingDefaults(generation: Readonly<Record<string, unknown>> | null): SamplingDefaults {
  if (!generation) return {};
  const pick = (key: string): number | undefined => (typeof generation[key] === 'number' ? (generation[key] as number) : undefined);
  const entries = {
    temperature: pick('temperature'),
    topP: pick('top_p'),
    topK: pick('top_k'),
    minP: pick('min_p'),
    repetitionPenalty: pick('repetition_penalty'),
    maxTokens: pick('max_new_tokens'),
  };
  return Object.fromEntries(Object.entries(entries).filter(([, v]) => v !== undefined)) as SamplingDefaults;
}

/** Largest token id per tokenizer: get_vocab builds a map of the whole vocabulary (~100 ms on the serving thread for 150 K tokens), once per tokenizer rather than at every load. */
const maxTokenIds = new WeakMap<TextTokenizer, number>();

function maxTokenId(tokenizer: TextTokenizer): number {
  let maxId = maxTokenIds.get(tokenizer);
  if (maxId !== undefined) return maxId;
  maxId = -1;
  for (const id of tokenizer.get_vocab(true).values()) if (id > maxId) maxId = id;
  maxTokenIds.set(tokenizer, maxId);
  return maxId;
}

export function modelInfo(files: ModelFiles, tokenizer: TextTokenizer, options: { maxModelLen?: number } = {}): ModelInfo {
  const vocabSize = maxTokenId(tokenizer) + 1;
  const specialTokens: SpecialTokens = {
    bos_token: tokenText(files.tokenizerConfig.bos_token),
    eos_token: tokenText(files.tokenizerConfig.eos_token),
    pad_token: tokenText(files.tokenizerConfig.pad_token),
    unk_token: tokenText(files.tokenizerConfig.unk_token),
  };
  const eos = idList(files.generationConfig?.eos_token_id);
  if (eos.length === 0) eos.push(...idList(files.config?.eos_token_id));
  const tokenizerEos = specialTokens.eos_token === null ? undefined : tokenizer.token_to_id(specialTokens.eos_token);
  if (tokenizerEos !== undefined) eos.push(tokenizerEos);
  return {
    contextLength: contextLength(files, options.maxModelLen),
    eosTokenIds: [...new Set(eos)].filter((id) => id < vocabSize),
    vocabSize,
    modelVocabSize: Math.max(vocabSize, positiveNumber(files.config?.vocab_size) ?? 0),
    specialTokens,
    samplingDefaults: samplingDefaults(files.generationConfig),
  };
}
