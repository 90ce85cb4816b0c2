import { describe, expect, it } from 'vitest';
import { floatTensor, int64Tensor } from '../../../kernels/onnx/dtypes.js';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { pagedAttention, pagedAttentionPlan, pagedAttentionPlans, pagedAttentionReference } from '../../../kernels/paged-attention.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';
import { randomLayout, type SequenceShape } from '../../support/paged-layout.js';

const seed = Date.now();
const random = new SeededRandom(seed);

/** One graph per head shape, symbolic in everything the layout changes. */
async function attentionSession(heads: number, kvHeads: number, dim: number, slidingWindow?: number) {
  const floatType = 'float32';
  const g = new GraphBuilder('paged_attention', floatType);
  const query = g.input('query', floatType, ['N', heads, dim]);
  const key = g.input('key', floatType, ['N', kvHeads, dim]);
  const value = g.input('value', floatType, ['N', kvHeads, dim]);
  const poolDims = [kvHeads, 'num_blocks', 'block_size', dim];
  const keyCache = g.input('key_cache', floatType, poolDims);
  const valueCache = g.input('value_cache', floatType, poolDims);
  const layout = {
    queryStarts: g.input('query_starts', 'int64', ['S']),
    queryLengths: g.input('query_lengths', 'int64', ['S']),
    pastLengths: g.input('past_lengths', 'int64', ['S']),
    blockTables: g.input('block_tables', 'int64', ['S', 'MB']),
    keyCache,
    flatTokens: query,
    groups: heads / kvHeads,
  };
  // A windowed plan is built beside the full one, as a graph with mixed layers does (shared index rows).
  const plan = slidingWindow === undefined ? pagedAttentionPlan(g, layout) : pagedAttentionPlans(g, layout, [undefined, slidingWindow]).get(slidingWindow)!;
  const output = pagedAttention(g, { query, key, value, keyCache, valueCache, plan, numHeads: heads, numKvHeads: kvHeads, headDim: dim });
  g.output(output, 'out', floatType, ['N', heads * dim]);
  return createSession(g);
}

async function compare(
  heads: number,
  kvHeads: number,
  dim: number,
  blockSize: number,
  sequences: readonly SequenceShape[],
  options: { sharedPrefixBlocks?: number; paddingColumns?: number; slidingWindow?: number } = {},
): Promise<number> {
  return (await run(heads, kvHeads, dim, blockSize, sequences, options)).error;
}

/** The graph's error against the reference with its window, and against full causal attention (`fullError`). */
async function run(
  heads: number,
  kvHeads: number,
  dim: number,
  blockSize: number,
  sequences: readonly SequenceShape[],
  options: { sharedPrefixBlocks?: number; paddingColumns?: number; slidingWindow?: number } = {},
): Promise<{ error: number; fullError: number }> {
  const floatType = 'float32';
  const layout = randomLayout(random, blockSize, sequences, options);
  const n = layout.numTokens;
  const poolDims = [kvHeads, layout.numBlocks, blockSize, dim];
  const data = (count: number): Float32Array => random.uniformWithStd(count, 1.5);
  const [q, k, v] = [data(n * heads * dim), data(n * kvHeads * dim), data(n * kvHeads * dim)];
  const poolSize = kvHeads * layout.numBlocks * blockSize * dim;
  const [kc, vc] = [data(poolSize), data(poolSize)];
  const session = await attentionSession(heads, kvHeads, dim, options.slidingWindow);
  const { out } = await runAsFloat64(session, {
    query: floatTensor(floatType, [n, heads, dim], q),
    key: floatTensor(floatType, [n, kvHeads, dim], k),
    value: floatTensor(floatType, [n, kvHeads, dim], v),
    key_cache: floatTensor(floatType, poolDims, kc),
    value_cache: floatTensor(floatType, poolDims, vc),
    query_starts: int64Tensor([sequences.length], layout.queryStarts),
    query_lengths: int64Tensor([sequences.length], layout.queryLengths),
    past_lengths: int64Tensor([sequences.length], layout.pastLengths),
    block_tables: int64Tensor([sequences.length, layout.maxBlocks], layout.blockTables.flat()),
  });
  const expected = (slidingWindow?: number) =>
    pagedAttentionReference(refTensor([n, heads, dim], q), refTensor([n, kvHeads, dim], k), refTensor([n, kvHeads, dim], v), refTensor(poolDims, kc), refTensor(poolDims, vc), {
      ...layout,
      ...(slidingWindow === undefined ? {} : { slidingWindow }),
    });
  expect(out!.dims).toEqual([n, heads * dim]);
  return { error: relativeError(out!.data, expected(options.slidingWindow).data), fullError: relativeError(out!.data, expected().data) };
}

describe(`paged attention (seed ${seed})`, () => {
  it('a fresh prompt: causal over its own tokens only', async () => {
    expect(await compare(4, 2, 8, 4, [{ past: 0, query: 6 }])).toBeLessThan(1e-5);
  });
  it('decode rows over shuffled blocks with partial last blocks, GQA 4 groups', async () => {
    expect(
      await compare(8, 2, 16, 4, [
        { past: 9, query: 1 },
        { past: 4, query: 1 },
        { past: 1, query: 1 },
      ]),
    ).toBeLessThan(1e-5);
  });
  it('mixed call: decode tokens, a chunk continuing a past, a fresh prompt', async () => {
    expect(
      await compare(4, 2, 8, 4, [
        { past: 7, query: 1 },
        { past: 5, query: 4 },
        { past: 0, query: 3 },
        { past: 12, query: 1 },
      ]),
    ).toBeLessThan(1e-5);
  });
  it('two sequences sharing prefix blocks', async () => {
    expect(
      await compare(
        4,
        1,
        8,
        4,
        [
          { past: 10, query: 1 },
          { past: 9, query: 3 },
        ],
        { sharedPrefixBlocks: 2 },
      ),
    ).toBeLessThan(1e-5);
  });
  it('without GQA (one query head per kv head), block size 1', async () => {
    expect(
      await compare(2, 2, 4, 1, [
        { past: 3, query: 2 },
        { past: 0, query: 1 },
      ]),
    ).toBeLessThan(1e-5);
  });
  it('every sequence fresh (no past at all)', async () => {
    expect(
      await compare(4, 2, 8, 8, [
        { past: 0, query: 2 },
        { past: 0, query: 5 },
      ]),
    ).toBeLessThan(1e-5);
  });
  it('fresh prompts with zero-width block tables (nothing in the pool yet)', async () => {
    expect(
      await compare(
        4,
        2,
        8,
        4,
        [
          { past: 0, query: 3 },
          { past: 0, query: 1 },
        ],
        { paddingColumns: 0 },
      ),
    ).toBeLessThan(1e-5);
  });
  describe('sliding window', () => {
    it('a prefill longer than the window, a decode step whose past is longer, a chunk over a past: one flat batch', async () => {
      const { error, fullError } = await run(
        8,
        2,
        16,
        4,
        [
          { past: 0, query: 11 },
          { past: 13, query: 1 },
          { past: 6, query: 5 },
          { past: 2, query: 1 },
        ],
        { slidingWindow: 4 },
      );
      expect(error).toBeLessThan(1e-5);
      expect(fullError).toBeGreaterThan(1e-2);
    });
    it('window 1: each query sees only itself', async () => {
      expect(
        await compare(
          4,
          2,
          8,
          3,
          [
            { past: 7, query: 3 },
            { past: 0, query: 2 },
          ],
          { slidingWindow: 1 },
        ),
      ).toBeLessThan(1e-5);
    });
    it('a window at least the context is full causal attention', async () => {
      const { error, fullError } = await run(
        4,
        2,
        8,
        4,
        [
          { past: 9, query: 3 },
          { past: 2, query: 1 },
        ],
        { slidingWindow: 12 },
      );
      expect(error).toBeLessThan(1e-5);
      expect(fullError).toBeLessThan(1e-5);
    });
    it('random layouts and windows', async () => {
      for (let round = 0; round < 8; round++) {
        const count = 1 + (random.nextUint32() % 4);
        const blockSize = [1, 2, 4, 16][random.nextUint32() % 4]!;
        const sequences = Array.from({ length: count }, () => ({ past: random.nextUint32() % 30, query: 1 + (random.nextUint32() % (random.next() < 0.5 ? 1 : 9)) }));
        const slidingWindow = 1 + (random.nextUint32() % 12);
        const error = await compare(4, 2, 8, blockSize, sequences, { slidingWindow });
        expect(error, JSON.stringify({ blockSize, sequences, slidingWindow })).toBeLessThan(1e-5);
      }
    });
  });
  it('random layouts', async () => {
    for (let round = 0; round < 12; round++) {
      const count = 1 + (random.nextUint32() % 5);
      const blockSize = [1, 2, 3, 4, 16][random.nextUint32() % 5]!;
      const sequences = Array.from({ length: count }, () => ({ past: random.nextUint32() % 40, query: 1 + (random.nextUint32() % (random.next() < 0.5 ? 1 : 7)) }));
      const shareable = count >= 2 ? Math.floor(Math.min(sequences[0]!.past, sequences[1]!.past) / blockSize) : 0;
      const sharedPrefixBlocks = shareable > 0 ? 1 + (random.nextUint32() % shareable) : 0;
      const [heads, kvHeads] = [
        [4, 2],
        [6, 2],
        [4, 4],
        [8, 1],
      ][random.nextUint32() % 4]!;
      const error = await compare(heads!, kvHeads!, 8, blockSize, sequences, { sharedPrefixBlocks });
      expect(error, JSON.stringify({ blockSize, sequences, sharedPrefixBlocks, heads, kvHeads })).toBeLessThan(1e-5);
    }
  });
});
