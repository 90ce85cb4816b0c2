import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { floatTensor, int64Tensor } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { refMatMul, refTensor } from '../../../kernels/reference/tensor.js';
import { BLOCK_SIZE, dequantizeWeight, embeddingLookupReference, quantizePerColumn, quantizedMatMul, quantizedMatMulReference, quantizedTiedEmbedding } from '../../../kernels/quantized-matmul.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

/** Activation rows of different sizes, as different tokens' hidden states are. */
function activations(random: SeededRandom, rows: number, width: number): Float32Array {
  const x = random.uniformWithStd(rows * width, 1);
  for (let r = 0; r < rows; r++) for (let i = 0; i < width; i++) x[r * width + i]! *= 1 + (r % 4);
  return x;
}

async function runMatMul(inFeatures: number, outFeatures: number, weight: Float32Array, x: Float32Array, lead: number[]) {
  const g = new GraphBuilder('quantized_matmul');
  const q = quantizePerColumn(weight, inFeatures, outFeatures);
  const input = g.input('x', 'float32', [...lead.map((_, i) => `d${i}`), inFeatures]);
  g.output(quantizedMatMul(g, input, 'proj', q), 'y', 'float32', [...lead.map((_, i) => `d${i}`), outFeatures]);
  const session = await createSession(g);
  const { y } = await runAsFloat64(session, { x: floatTensor('float32', [...lead, inFeatures], x) });
  return { q, session, y: y! };
}

describe('quantizedMatMul', () => {
  // 320 inputs: two full blocks and a padded half block.
  const [inFeatures, outFeatures] = [BLOCK_SIZE * 2 + 64, 72];

  it('matches the float64 reference of its exact quantized math on fresh random inputs', async () => {
    const random = new SeededRandom(Date.now());
    const weight = random.uniformWithStd(inFeatures * outFeatures, 0.05);
    const x = activations(random, 6, inFeatures);
    const { q, y } = await runMatMul(inFeatures, outFeatures, weight, x, [2, 3]);

    expect(y.dims).toEqual([2, 3, outFeatures]);
    const expected = quantizedMatMulReference(refTensor([2, 3, inFeatures], x), q);
    expect(relativeError(y.data, expected.data)).toBeLessThan(1e-5);
  });

  it('stays within the int8 quantization error of the fp32 product', async () => {
    const random = new SeededRandom(Date.now() + 1);
    const weight = random.uniformWithStd(inFeatures * outFeatures, 0.05);
    const x = activations(random, 8, inFeatures);
    const { q, y } = await runMatMul(inFeatures, outFeatures, weight, x, [8]);

    // Weights and activations are each rounded to steps of max|block| / 127, which moves these
    // outputs by ≈ 0.55 % of their scale (measured mean 5.7e-3, worst 7.4e-3 over 65 trials);
    // 2 % is a bound a systematic mistake (wrong scale, zero point or block) would not meet.
    const exact = refMatMul(refTensor([8, inFeatures], x), refTensor([inFeatures, outFeatures], weight));
    expect(relativeError(y.data, exact.data)).toBeLessThan(2e-2);
    // Weight rounding alone is at most half a step per element.
    const weightOnly = refMatMul(refTensor([8, inFeatures], x), dequantizeWeight(q));
    expect(relativeError(weightOnly.data, exact.data)).toBeLessThan(1e-2);
  });

  it('gives a row the same result alone as inside a batch', async () => {
    const random = new SeededRandom(Date.now() + 2);
    const weight = random.uniformWithStd(inFeatures * outFeatures, 0.05);
    const x = activations(random, 8, inFeatures);
    const { session, y } = await runMatMul(inFeatures, outFeatures, weight, x, [8]);
    const alone = await runAsFloat64(session, { x: floatTensor('float32', [1, inFeatures], x.subarray(inFeatures * 3, inFeatures * 4)) });

    expect(relativeError(alone.y!.data, y.data.subarray(outFeatures * 3, outFeatures * 4))).toBeLessThan(1e-6);
  });
});

describe('quantizedTiedEmbedding', () => {
  it('looks up and projects through one int8 table stored once', async () => {
    const random = new SeededRandom(Date.now() + 3);
    const [vocab, hidden] = [500, BLOCK_SIZE + 64];
    const table = random.uniformWithStd(vocab * hidden, 0.5);
    const g = new GraphBuilder('tied_embedding');
    const ids = g.input('input_ids', 'int64', ['batch_size', 'seq']);
    const h = g.input('h', 'float32', ['batch_size', hidden]);
    const tied = quantizedTiedEmbedding(g, 'model.embed_tokens', table, vocab, hidden);
    g.output(tied.lookup(ids), 'embeddings', 'float32', ['batch_size', 'seq', hidden]);
    g.output(tied.lmHead(h), 'logits', 'float32', ['batch_size', vocab]);
    // One uint8 table (padded to whole blocks) and its fp32 scales; a second copy would double it.
    const blocks = Math.ceil(hidden / BLOCK_SIZE);
    expect(g.toModel().byteLength).toBeLessThan(vocab * blocks * (BLOCK_SIZE + 4) + 4096);

    const tokenIds = random.ints(6, vocab);
    const x = activations(random, 2, hidden);
    const out = await runAsFloat64(await createSession(g), {
      input_ids: int64Tensor([2, 3], tokenIds),
      h: floatTensor('float32', [2, hidden], x),
    });

    expect(out.embeddings!.dims).toEqual([2, 3, hidden]);
    expect(relativeError(out.embeddings!.data, embeddingLookupReference(tokenIds, [2, 3], tied.weight).data)).toBeLessThan(1e-6);
    const exactRows = Float64Array.from(tokenIds.flatMap((id) => Array.from(table.subarray(id * hidden, (id + 1) * hidden))));
    // Half a step, max|block| / 254, at most.
    expect(relativeError(out.embeddings!.data, exactRows)).toBeLessThan(0.5 / 127 + 1e-6);
    expect(relativeError(out.logits!.data, quantizedMatMulReference(refTensor([2, hidden], x), tied.weight).data)).toBeLessThan(1e-5);
  });
});
