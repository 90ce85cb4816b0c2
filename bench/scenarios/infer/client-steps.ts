// The default repository's pipelines done by the client, as a user without ensembles does: the
// text-embedder's tokenizer and mean pooling around a bert-tiny call, and the image-classifier's
// decode / resize / normalise and top-5 around a resnet-tiny call. The infer bench's --pipelines
// compares these against the ensembles in the server, and the pipelines' integration test uses
// them as its oracle: written apart from the server's steps (models/repository/*/1/model.ts).

import { join } from 'node:path';
import sharp from 'sharp';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { loadTokenizer } from '../../../src/backend-api/tokenizer.js';

export const IMAGE_SIZE = 224;
const IMAGENET_MEAN = [0.485, 0.456, 0.406];
const IMAGENET_STD = [0.229, 0.224, 0.225];

/** bert-tiny's inputs for some texts, padded to the longest with [PAD] (id 0). */
export interface BertBatch {
  readonly rows: number;
  readonly width: number;
  readonly inputIds: BigInt64Array;
  readonly attentionMask: BigInt64Array;
  readonly tokenTypeIds: BigInt64Array;
  /** Each text's token count. */
  readonly lengths: readonly number[];
}

let tokenizer: ReturnType<typeof loadTokenizer> | undefined;

/** Tokenizes with bert-tiny's own tokenizer files ([CLS] ... [SEP]). */
export async function tokenizeForBert(texts: readonly string[]): Promise<BertBatch> {
  tokenizer ??= loadTokenizer(join(DEFAULT_REPOSITORY, 'bert-tiny', '1'));
  const encoder = await tokenizer;
  const ids = texts.map((text) => encoder.tokenizer.encode(text, { add_special_tokens: true }).ids);
  const width = Math.max(...ids.map((row) => row.length));
  const inputIds = new BigInt64Array(texts.length * width);
  const attentionMask = new BigInt64Array(texts.length * width);
  ids.forEach((row, r) =>
    row.forEach((id, t) => {
      inputIds[r * width + t] = BigInt(id);
      attentionMask[r * width + t] = 1n;
    }),
  );
  return { rows: texts.length, width, inputIds, attentionMask, tokenTypeIds: new BigInt64Array(texts.length * width), lengths: ids.map((row) => row.length) };
}

/** Sentence embeddings from last_hidden_state [rows, width, hidden]: masked mean, then unit L2 norm. */
export function meanPool(hidden: Float32Array, mask: BigInt64Array, rows: number, width: number): Float32Array[] {
  const dim = hidden.length / (rows * width);
  return Array.from({ length: rows }, (_, r) => {
    const sum = new Float64Array(dim);
    let kept = 0;
    for (let t = 0; t < width; t++) {
      if (mask[r * width + t] !== 1n) continue;
      kept++;
      for (let d = 0; d < dim; d++) sum[d]! += hidden[(r * width + t) * dim + d]!;
    }
    const mean = sum.map((v) => v / kept);
    const norm = Math.hypot(...mean);
    return Float32Array.from(mean, (v) => v / norm);
  });
}

/** An encoded image as resnet-tiny's input: shorter side to 224, centre crop, RGB, ImageNet-normalised, CHW. */
export async function preprocessImage(encoded: Uint8Array): Promise<Float32Array> {
  const { data, info } = await sharp(encoded).rotate().removeAlpha().toColourspace('srgb').resize(IMAGE_SIZE, IMAGE_SIZE, { fit: 'cover' }).raw().toBuffer({ resolveWithObject: true });
  const plane = info.width * info.height;
  const out = new Float32Array(3 * plane);
  for (let p = 0; p < plane; p++) for (let c = 0; c < 3; c++) out[c * plane + p] = (data[p * info.channels + c]! / 255 - IMAGENET_MEAN[c]!) / IMAGENET_STD[c]!;
  return out;
}

export interface TopK {
  readonly classIds: number[];
  readonly labels: string[];
  readonly scores: number[];
}

/** The k likeliest classes of one logits row, best first (ties: lower index), with softmax scores. */
export function topK(logits: ArrayLike<number>, labels: readonly string[], k = 5): TopK {
  const values = Array.from(logits);
  const max = Math.max(...values);
  const total = values.reduce((sum, v) => sum + Math.exp(v - max), 0);
  const classIds = values
    .map((_, i) => i)
    .sort((a, b) => values[b]! - values[a]! || a - b)
    .slice(0, k);
  return { classIds, labels: classIds.map((c) => labels[c] ?? String(c)), scores: classIds.map((c) => Math.exp(values[c]! - max) / total) };
}
