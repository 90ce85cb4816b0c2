// POST /v1/embeddings: inputs (a string, strings, token ids, or lists of token ids) tokenized
// with the encoder's own tokenizer, grouped by length into batches no larger than the model's
// max_batch_size and padded within each group, then run through service.infer() — the dynamic
// batcher may merge groups of equal length from concurrent requests. The `sentence_embedding`
// rows come back in input order, as floats or as base64 of little-endian float32; `dimensions`
// below the model's size keeps the leading components, re-normalised (Matryoshka models).
// A text model (an ensemble such as text-embedder: BYTES texts in, FP32 embeddings out) gets the
// texts themselves, in batches of its max_batch_size; it tokenizes inside, so token-id inputs
// are refused, and usage counts its NUM_TOKENS output where it has one (0 where it has none).

import type { InferRequest } from '../src/contracts/infer.js';
import type { Tensor } from '../src/contracts/tensors.js';
import { ConveyorError, invalidArg } from '../src/errors.js';
import { OFFTHREAD_MIN_CHARS, promptCharLimit } from '../src/config/limits.js';
import type { OpenAIContext } from './context.js';
import type { EncoderTokenizer } from '../src/serving/encoder-tokenizer.js';
import { EMBEDDING_OUTPUT, type EmbeddingModel, type TextTensors } from './embedding-models.js';
import { unknownParameter } from './errors.js';
import { checkNoOps, KEEP_ALIVE_FIELD, optionalFlag } from './request-fields.js';
import { requireModel, requireObject, type Body } from '../src/server/kit/body.js';

const FIELDS = new Set(['model', 'input', 'encoding_format', 'dimensions', 'user', 'add_special_tokens', KEEP_ALIVE_FIELD]);
/** OpenAI's own limit on inputs per request. */
export const MAX_INPUTS = 2048;

type Encoding = 'float' | 'base64';

function encodingFormat(body: Body): Encoding {
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') throw invalidArg(`encoding_format must be 'float' or 'base64', got ${JSON.stringify(format)}`, 'encoding_format');
  return format;
}

const isTokenList = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((t) => typeof t === 'number');

/** The inputs as token id lists, validated against the tokenizer's vocabulary and length. */
export function tokenizeInputs(input: unknown, encoder: EncoderTokenizer, addSpecialTokens: boolean): number[][] {
  return inputItems(input).map((item, i) => tokenizeItem(item, i, encoder, addSpecialTokens));
}

/**
 * tokenizeInputs for the route: between inputs it yields to the event loop once another
 * OFFTHREAD_MIN_CHARS characters have been tokenized, so a body of many long inputs (up to the
 * JSON body limit) holds other clients up for one input at most, never for the whole body.
 */
export async function tokenizeInputsYielding(input: unknown, encoder: EncoderTokenizer, addSpecialTokens: boolean): Promise<number[][]> {
  const out: number[][] = [];
  let sinceYield = 0;
  for (const [i, item] of inputItems(input).entries()) {
    out.push(tokenizeItem(item, i, encoder, addSpecialTokens));
    sinceYield += typeof item === 'string' ? item.length : 0;
    if (sinceYield >= OFFTHREAD_MIN_CHARS) {
      sinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return out;
}

function inputItems(input: unknown): unknown[] {
  const items: unknown[] = typeof input === 'string' || isTokenList(input) ? [input] : Array.isArray(input) ? input : [];
  if (items.length === 0) throw invalidArg('input must be a non-empty string, array of strings, array of token ids, or array of token id arrays', 'input');
  if (items.length > MAX_INPUTS) throw invalidArg(`input has ${items.length} items; at most ${MAX_INPUTS} are allowed`, 'input');
  return items;
}

function tokenizeItem(item: unknown, i: number, encoder: EncoderTokenizer, addSpecialTokens: boolean): number[] {
  let ids: number[];
  if (typeof item === 'string') {
    if (item.length === 0) throw invalidArg(`input[${i}] must not be an empty string`, 'input');
    // An input this long cannot fit the context anyway; refusing it unread costs no tokenizing.
    const maxChars = promptCharLimit({ maxPromptChars: 0 }, encoder.maxLength);
    if (item.length > maxChars)
      throw new ConveyorError(
        'CONTEXT_LENGTH_EXCEEDED',
        `input[${i}] has ${item.length} characters, more than the ${maxChars} this server accepts for a ${encoder.maxLength}-token model. Please shorten the input.`,
        'input',
      );
    ids = encoder.tokenizer.encode(item, { add_special_tokens: addSpecialTokens }).ids;
  } else if (isTokenList(item)) {
    if (!item.every((t) => Number.isInteger(t) && t >= 0 && t < encoder.vocabSize)) throw invalidArg(`input[${i}] holds a token id outside the vocabulary (0..${encoder.vocabSize - 1})`, 'input');
    ids = item;
  } else {
    throw invalidArg(`input[${i}] must be a string or a non-empty array of token ids`, 'input');
  }
  if (ids.length > encoder.maxLength) {
    throw new ConveyorError(
      'CONTEXT_LENGTH_EXCEEDED',
      `This model's maximum context length is ${encoder.maxLength} tokens. However, input[${i}] has ${ids.length} tokens. Please shorten the input.`,
      'input',
    );
  }
  return ids;
}

/** Input indices grouped by token count (so padding is rare) into batches of at most `size`. */
export function groupByLength(lengths: readonly number[], size: number): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a]! - lengths[b]! || a - b);
  const groups: number[][] = [];
  for (let i = 0; i < order.length; i += size) groups.push(order.slice(i, i + size));
  return groups;
}

function inferRequest(model: EmbeddingModel, rows: readonly number[][]): InferRequest {
  const width = Math.max(...rows.map((r) => r.length));
  const ids = new BigInt64Array(rows.length * width);
  const mask = new BigInt64Array(rows.length * width);
  rows.forEach((row, r) =>
    row.forEach((id, t) => {
      ids[r * width + t] = BigInt(id);
      mask[r * width + t] = 1n;
    }),
  );
  const shape = [rows.length, width];
  const available: Record<string, Tensor> = {
    input_ids: { name: 'input_ids', datatype: 'INT64', shape, data: ids },
    attention_mask: { name: 'attention_mask', datatype: 'INT64', shape, data: mask },
    token_type_ids: { name: 'token_type_ids', datatype: 'INT64', shape, data: new BigInt64Array(rows.length * width) },
  };
  const inputs = model.config.input.map((i) => available[i.name]);
  if (inputs.some((t) => t === undefined)) throw new ConveyorError('UNSUPPORTED', `model '${model.name}' takes inputs other than input_ids, attention_mask and token_type_ids`);
  return { model: model.name, version: model.version, parameters: {}, inputs: inputs as Tensor[], outputs: [{ name: EMBEDDING_OUTPUT, parameters: {} }] };
}

function encodeBase64(row: Float32Array): string {
  const bytes = Buffer.alloc(row.length * 4);
  row.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes.toString('base64');
}

async function embedAll(ctx: OpenAIContext, model: EmbeddingModel, tokens: number[][], signal: AbortSignal): Promise<Float32Array[]> {
  const batch = model.config.max_batch_size > 0 ? model.config.max_batch_size : 1;
  const groups = groupByLength(
    tokens.map((t) => t.length),
    batch,
  );
  const rows: Float32Array[] = new Array(tokens.length);
  await Promise.all(
    groups.map(async (group) => {
      const response = await ctx.service.infer(
        inferRequest(
          model,
          group.map((i) => tokens[i]!),
        ),
        signal,
      );
      const output = response.outputs.find((o) => o.name === EMBEDDING_OUTPUT);
      if (!output || !(output.data instanceof Float32Array)) throw new ConveyorError('INTERNAL', `model '${model.name}' returned no FP32 ${EMBEDDING_OUTPUT}`);
      const dim = output.data.length / group.length;
      group.forEach((index, r) => (rows[index] = output.data.slice(r * dim, (r + 1) * dim) as Float32Array));
    }),
  );
  return rows;
}

/**
 * The requested `dimensions`: null for the model's own size (which changes nothing). Larger than the model's size (when
 * its config fixes one) or below 1 is a 400 naming `dimensions`.
 */
export function requestedDimensions(dimensions: unknown, native: number | undefined): number | null {
  if (dimensions === undefined || dimensions === null) return null;
  if (typeof dimensions !== 'number' || !Number.isInteger(dimensions) || dimensions < 1) throw invalidArg(`dimensions must be an integer ≥ 1, got ${JSON.stringify(dimensions)}`, 'dimensions');
  if (native !== undefined && native > 0 && dimensions > native) throw invalidArg(`dimensions (${dimensions}) exceeds this model's embedding size (${native})`, 'dimensions');
  return dimensions === native ? null : dimensions;
}

/**
 * A Matryoshka-style shortening: the first `dimensions` components, rescaled to unit L2 norm
 * (as OpenAI returns shortened embeddings, so cosine and dot product stay interchangeable).
 */
export function shortenEmbedding(row: Float32Array, dimensions: number): Float32Array {
  if (dimensions > row.length) throw invalidArg(`dimensions (${dimensions}) exceeds this model's embedding size (${row.length})`, 'dimensions');
  if (dimensions === row.length) return row;
  const head = row.slice(0, dimensions);
  let sum = 0;
  for (const v of head) sum += v * v;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < head.length; i++) head[i] = head[i]! / norm;
  return head;
}

/** A text model's inputs: strings only, none empty. */
function textInputs(input: unknown, model: EmbeddingModel): string[] {
  return inputItems(input).map((item, i) => {
    if (typeof item !== 'string') throw invalidArg(`input[${i}] must be a string: model '${model.name}' tokenizes its own input and takes no token ids`, 'input');
    if (item.length === 0) throw invalidArg(`input[${i}] must not be an empty string`, 'input');
    return item;
  });
}

/** The texts through a text model in batches of its max_batch_size: each text's row and the token count it reports. */
async function embedTexts(ctx: OpenAIContext, model: EmbeddingModel, tensors: TextTensors, texts: readonly string[], signal: AbortSignal): Promise<{ rows: Float32Array[]; tokens: number }> {
  const batching = model.config.max_batch_size > 0;
  const size = batching ? model.config.max_batch_size : 1;
  const groups: number[][] = [];
  for (let i = 0; i < texts.length; i += size) groups.push(texts.slice(i, i + size).map((_, j) => i + j));
  const rows: Float32Array[] = new Array(texts.length);
  let tokens = 0;
  const encoder = new TextEncoder();
  await Promise.all(
    groups.map(async (group) => {
      const shape = batching ? [group.length, 1] : [1];
      const outputs = [tensors.embedding, ...(tensors.tokenCount ? [tensors.tokenCount] : [])].map((name) => ({ name, parameters: {} }));
      const request: InferRequest = {
        model: model.name,
        version: model.version,
        parameters: {},
        inputs: [{ name: tensors.input, datatype: 'BYTES', shape, data: group.map((i) => encoder.encode(texts[i]!)) }],
        outputs,
      };
      const response = await ctx.service.infer(request, signal);
      const output = response.outputs.find((o) => o.name === tensors.embedding);
      if (!output || !(output.data instanceof Float32Array)) throw new ConveyorError('INTERNAL', `model '${model.name}' returned no FP32 ${tensors.embedding}`);
      const dim = output.data.length / group.length;
      group.forEach((index, r) => (rows[index] = output.data.slice(r * dim, (r + 1) * dim) as Float32Array));
      const counts = response.outputs.find((o) => o.name === tensors.tokenCount)?.data;
      if (counts !== undefined && !Array.isArray(counts)) for (const n of Array.from(counts as ArrayLike<number | bigint>)) tokens += Number(n);
    }),
  );
  return { rows, tokens };
}

/** The rows and the prompt token count, by the model's kind. */
async function embed(ctx: OpenAIContext, model: EmbeddingModel, body: Body, signal: AbortSignal): Promise<{ rows: Float32Array[]; tokens: number }> {
  if (model.text !== null) {
    if (optionalFlag(body, 'add_special_tokens', true) === false) throw invalidArg(`add_special_tokens cannot be false for model '${model.name}', which tokenizes its own input`, 'add_special_tokens');
    return embedTexts(ctx, model, model.text, textInputs(body.input, model), signal);
  }
  const encoder = await ctx.embeddings.tokenizer(model);
  const tokens = await tokenizeInputsYielding(body.input, encoder, optionalFlag(body, 'add_special_tokens', true));
  return {
    rows: await embedAll(ctx, model, tokens, signal),
    tokens: tokens.reduce((n, t) => n + t.length, 0),
  };
}

export async function createEmbeddings(ctx: OpenAIContext, rawBody: unknown, signal: AbortSignal): Promise<unknown> {
  const body = requireObject(rawBody);
  for (const key of Object.keys(body)) if (!FIELDS.has(key)) throw unknownParameter(key);
  checkNoOps(body);
  const requested = requireModel(body);
  const model = ctx.embeddings.resolve(requested);
  const format = encodingFormat(body);
  const embeddingOutput = model.text?.embedding ?? EMBEDDING_OUTPUT;
  const dimensions = requestedDimensions(body.dimensions, model.config.output.find((o) => o.name === embeddingOutput)?.dims.at(-1));
  const { rows: full, tokens: promptTokens } = await embed(ctx, model, body, signal);
  const rows = dimensions === null ? full : full.map((row) => shortenEmbedding(row, dimensions));
  return {
    object: 'list',
    data: rows.map((row, index) => ({ object: 'embedding', index, embedding: format === 'base64' ? encodeBase64(row) : Array.from(row) })),
    model: requested,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
}
