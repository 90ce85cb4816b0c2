// The paged decoder graph (model_paged*.onnx) against the Optimum model (model*.onnx) on the same
// weights: the history goes through model.onnx, its present K/V are written into a pool at a
// shuffled block layout (two sequences sharing prefix blocks), and one mixed paged call (decode
// tokens, a chunk continuing a past, a fresh prompt) must give model.onnx's logits and K/V.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../../../models/catalog.js';
import { greedyTokensReference, GREEDY_TOKENS } from '../../../kernels/greedy-tokens.js';
import { sha256Of } from '../../../models/common/model-files.js';
import { DECODER_CONFIGS, type DecoderConfig } from '../../../models/qwen3/config.js';
import { buildDecoderGraph } from '../../../models/qwen3/graph.js';
import type { LinearWeights } from '../../../kernels/linear.js';
import { buildPagedDecoderGraph } from '../../../models/qwen3/paged-graph.js';
import { type DecoderWeights, initDecoderWeights } from '../../../models/qwen3/weights.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { fromFloat16Array } from '../../../kernels/onnx/dtypes.js';
import { pagedVariantFile, variantFile } from '../../../src/repository/variants.js';
import { decoderShape, emptyCache, forward } from '../../support/decoder.js';
import { relativeError } from '../../support/onnx.js';
import { randomLayout } from '../../support/paged-layout.js';

const tiny = DECODER_CONFIGS.tiny;
type Variant = 'fp32' | 'fp16' | 'int8' | 'q4' | 'q4f16';
const VARIANTS: readonly Variant[] = ['fp32', 'fp16', 'int8', 'q4', 'q4f16'];
let dir: string;

beforeAll(async () => {
  dir = (await ensureBuilt('qwen3', 'tiny', { dir: join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1') })).dir;
});

const open = (file: string) => ort.InferenceSession.create(join(dir, 'onnx', file), { intraOpNumThreads: 1, logSeverityLevel: 3 });

/** History already in the pool, then the tokens of this call. */
const SEQUENCES = [
  { history: [9707, 11, 1879, 0, 358, 1079, 264, 5458, 13, 40], call: [1079] }, // decode
  { history: [9707, 11, 1879, 0, 358, 1079, 264, 5458, 3838, 374, 279], call: [6722, 315, 9625, 30] }, // chunk after a past sharing 2 blocks
  { history: [], call: [151644, 872, 198, 3838, 374] }, // fresh prompt
  { history: [785, 3974, 13876, 38835, 34208], call: [916] }, // decode, one partial block
];
const BLOCK_SIZE = 4;

const asFloat = (t: ort.Tensor): Float32Array => (t.type === 'float16' ? fromFloat16Array(t.data as Uint16Array) : (t.data as Float32Array));

async function comparePaged(optimum: ort.InferenceSession, paged: ort.InferenceSession, c: DecoderConfig = tiny): Promise<{ logits: number; keys: number; values: number }> {
  const shape = decoderShape(optimum);
  // model.onnx over history + call, all logits: the reference rows and the K/V of every position.
  const references = await Promise.all(
    SEQUENCES.map(async ({ history, call }) => {
      const ids = [...history, ...call];
      const out = await forward(optimum, emptyCache(shape, 1, ort), [ids], [ids.map(() => 1)]);
      return { logits: out.logits[0]!, present: out.cache, vocab: out.vocab };
    }),
  );
  const random = new SeededRandom(13);
  const layout = randomLayout(
    random,
    BLOCK_SIZE,
    SEQUENCES.map((s) => ({ past: s.history.length, query: s.call.length })),
    { sharedPrefixBlocks: 2 },
  );
  const { numKvHeads: kvHeads, headDim: dim } = shape;
  const poolSize = kvHeads * layout.numBlocks * BLOCK_SIZE * dim;
  const feeds: Record<string, ort.Tensor> = {};
  const int64 = (dims: number[], values: readonly number[]) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), dims);
  for (let layer = 0; layer < c.numLayers; layer++) {
    for (const kind of ['key', 'value'] as const) {
      // Garbage everywhere, then each sequence's past written at its blocks.
      const pool = shape.kvType === 'float16' ? Uint16Array.from(random.ints(poolSize, 0x3c00)) : random.uniformWithStd(poolSize, 3);
      SEQUENCES.forEach((s, seq) => {
        const present = references[seq]!.present[`past_key_values.${layer}.${kind}`]!;
        const total = present.dims[2]!;
        const data = present.data as Float32Array | Uint16Array;
        for (let p = 0; p < s.history.length; p++) {
          const block = layout.blockTables[seq]![Math.floor(p / BLOCK_SIZE)]!;
          for (let h = 0; h < kvHeads; h++) {
            const to = ((h * layout.numBlocks + block) * BLOCK_SIZE + (p % BLOCK_SIZE)) * dim;
            pool.set(data.subarray((h * total + p) * dim, (h * total + p + 1) * dim), to);
          }
        }
      });
      feeds[`${kind}_cache.${layer}`] = new ort.Tensor(shape.kvType, pool, [kvHeads, layout.numBlocks, BLOCK_SIZE, dim]);
    }
  }
  const tokens = SEQUENCES.flatMap((s) => s.call);
  // Every row's logits, one of them twice and out of order (the runner may ask so).
  const logitsIndices = [...tokens.map((_, n) => n), 2];
  Object.assign(feeds, {
    input_ids: int64([tokens.length], tokens),
    position_ids: int64([tokens.length], layout.positions),
    query_starts: int64([SEQUENCES.length], layout.queryStarts),
    query_lengths: int64([SEQUENCES.length], layout.queryLengths),
    past_lengths: int64([SEQUENCES.length], layout.pastLengths),
    block_tables: int64([SEQUENCES.length, layout.maxBlocks], layout.blockTables.flat()),
    logits_indices: int64([logitsIndices.length], logitsIndices),
    // Both heads at once on the same positions: the greedy head must pick the logits head's argmax.
    [GREEDY_TOKENS.indicesInput]: int64([logitsIndices.length], logitsIndices),
    [GREEDY_TOKENS.sampleableInput]: int64([1], [c.tokenizerVocabSize]),
  });
  const out = await paged.run(feeds);
  // The reference for flat token n: its sequence's row at position past + j.
  const owner = layout.queryStarts.flatMap((start, seq) => Array.from({ length: layout.queryLengths[seq]! }, (_, j) => ({ seq, j, n: start + j })));
  const vocab = c.vocabSize;
  const expectedLogits = new Float64Array(logitsIndices.length * vocab);
  logitsIndices.forEach((n, row) => {
    const { seq, j } = owner[n]!;
    const position = SEQUENCES[seq]!.history.length + j;
    expectedLogits.set(references[seq]!.logits.subarray(position * vocab, (position + 1) * vocab), row * vocab);
  });
  expect(out.logits!.dims).toEqual([logitsIndices.length, vocab]);
  const kvError = (kind: 'key' | 'value'): number => {
    let worst = 0;
    for (let layer = 0; layer < c.numLayers; layer++) {
      const actual = asFloat(out[`new_${kind}.${layer}`]!);
      const expected = new Float64Array(tokens.length * kvHeads * dim);
      for (const { seq, j, n } of owner) {
        const present = references[seq]!.present[`past_key_values.${layer}.${kind}`]!;
        const total = present.dims[2]!;
        const data = asFloat(present);
        for (let h = 0; h < kvHeads; h++) {
          const from = (h * total + SEQUENCES[seq]!.history.length + j) * dim;
          expected.set(data.subarray(from, from + dim), (n * kvHeads + h) * dim);
        }
      }
      worst = Math.max(worst, relativeError(actual, expected));
    }
    return worst;
  };
  // Only ids the tokenizer has: the rest carry a -1e4 bias that would dwarf any error.
  const actualLogits = asFloat(out.logits!);
  const sampleable = (all: ArrayLike<number>) =>
    Float64Array.from({ length: logitsIndices.length * c.tokenizerVocabSize }, (_, i) => all[Math.floor(i / c.tokenizerVocabSize) * vocab + (i % c.tokenizerVocabSize)]!);
  const greedy = Array.from(out[GREEDY_TOKENS.output]!.data as BigInt64Array, Number);
  expect(greedy).toEqual(greedyTokensReference(actualLogits, vocab, c.tokenizerVocabSize));
  return { logits: relativeError(sampleable(actualLogits), sampleable(expectedLogits)), keys: kvError('key'), values: kvError('value') };
}

describe('Qwen3-style paged decoder (tiny)', () => {
  it('builds the same bytes every time', () => {
    const first = sha256Of(buildPagedDecoderGraph(tiny, initDecoderWeights(tiny), 'fp32'));
    expect(sha256Of(buildPagedDecoderGraph(tiny, initDecoderWeights(tiny), 'fp32'))).toBe(first);
    expect(first).toBe('c7f6b463c95371e4e99f836e4189b0790b436b0c74c5df062e4f4d5e7a6cb96c');
  });

  it('has the paged I/O contract', async () => {
    const s = await open('model_paged.onnx');
    expect(s.inputNames.slice(0, 7)).toEqual(['input_ids', 'position_ids', 'query_starts', 'query_lengths', 'past_lengths', 'block_tables', 'logits_indices']);
    expect(s.inputNames.slice(7, 9)).toEqual(['key_cache.0', 'value_cache.0']);
    expect(s.inputNames.slice(-2)).toEqual([GREEDY_TOKENS.indicesInput, GREEDY_TOKENS.sampleableInput]);
    expect(s.outputNames.slice(0, 4)).toEqual(['logits', GREEDY_TOKENS.output, 'new_key.0', 'new_value.0']);
    const pool = s.inputMetadata.find((m) => m.name === 'key_cache.3') as unknown as { shape: unknown[]; type: string };
    expect(pool.shape).toEqual([tiny.numKvHeads, 'num_blocks', 'block_size', tiny.headDim]);
    // The builder writes the paged graph beside every Optimum variant.
    for (const variant of VARIANTS) expect(existsSync(join(dir, 'onnx', pagedVariantFile(variantFile(variant))))).toBe(true);
    const fp16 = await open('model_paged_fp16.onnx');
    expect((fp16.inputMetadata.find((m) => m.name === 'value_cache.0') as unknown as { type: string }).type).toBe('float16');
  });

  // fp16 rounds differently in the two graphs (the paged one sums past and new attention as two
  // MatMuls): ≈ 1e-3 measured. q4f16 ≈ 2e-2: MatMulNBits quantizes fp16 activations to int8 per
  // block, so those 1e-3 differences flip activation codes and grow layer by layer (q4 in fp32,
  // same weights, stays at ≈ 4e-7). fp32 / int8 / q4 ≈ 5e-7.
  const tolerance: Record<Variant, number> = { fp32: 1e-5, int8: 1e-5, q4: 1e-5, fp16: 5e-3, q4f16: 5e-2 };
  it.each(VARIANTS)('%s: a mixed call over a shuffled pool gives the Optimum model’s logits and K/V', async (variant) => {
    const errors = await comparePaged(await open(variantFile(variant)), await open(pagedVariantFile(variantFile(variant))));
    console.log(
      `[qwen3-tiny paged ${variant}] relative error vs Optimum: logits ${errors.logits.toExponential(2)}, new_key ${errors.keys.toExponential(2)}, new_value ${errors.values.toExponential(2)}`,
    );
    expect(errors.logits).toBeLessThan(tolerance[variant]);
    expect(errors.keys).toBeLessThan(tolerance[variant]);
    expect(errors.values).toBeLessThan(tolerance[variant]);
  });

  it("the converter's other layouts too: no q/k norm, q/k/v biases, an untied lm_head (LLaMA / Qwen2)", async () => {
    const base = initDecoderWeights(tiny);
    const withBias = (l: LinearWeights): LinearWeights => ({ ...l, bias: Float32Array.from({ length: l.outFeatures }, (_, i) => ((i % 5) - 2) * 0.01) });
    const weights: DecoderWeights = {
      ...base,
      lmHead: base.embedding.map((x, i) => x * 0.5 + (i % 7) * 1e-3),
      layers: base.layers.map(({ qNorm: _q, kNorm: _k, ...rest }) => ({ ...rest, q: withBias(rest.q), k: withBias(rest.k), v: withBias(rest.v) })),
    };
    const session = (bytes: Uint8Array) => ort.InferenceSession.create(bytes, { intraOpNumThreads: 1, logSeverityLevel: 3 });
    const bytes = (model: { chunks: readonly Uint8Array[] }) => new Uint8Array(Buffer.concat(model.chunks));
    const errors = await comparePaged(await session(bytes(buildDecoderGraph(tiny, weights, 'fp32'))), await session(bytes(buildPagedDecoderGraph(tiny, weights, 'fp32'))));
    expect(errors.logits).toBeLessThan(1e-5);
    expect(errors.keys).toBeLessThan(1e-5);
    expect(errors.values).toBeLessThan(1e-5);
  });
});
