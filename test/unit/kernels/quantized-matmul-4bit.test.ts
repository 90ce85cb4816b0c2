// The 4-bit path of kernels/quantized-matmul.ts (q4 / q4f16 variants): MatMulNBits bits 4, codes
// packed low nibble first, the op's default zero point 8, checked against the float64 reference
// of the exact math at both measured block sizes, and the tied lookup that unpacks the nibbles.
import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { floatTensor, fromFloat16Array, int64Tensor } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { refMatMul, refTensor } from '../../../kernels/reference/tensor.js';
import { dequantizeWeight, embeddingLookupReference, packNibbles, quantizePerColumn, quantizedMatMul, quantizedMatMulReference, quantizedTiedEmbedding } from '../../../kernels/quantized-matmul.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

describe('4-bit quantization', () => {
  it('packs two codes per byte, the even index in the low nibble', () => {
    expect(Array.from(packNibbles(Uint8Array.from([1, 2, 15, 0, 8, 8])))).toEqual([0x21, 0x0f, 0x88]);
  });

  it('rounds each block to 15 symmetric levels around the zero point 8', () => {
    const random = new SeededRandom(7);
    const weight = random.uniformWithStd(96 * 5, 0.3);
    const q = quantizePerColumn(weight, 96, 5, 32, 4);
    expect(q.bits).toBe(4);
    expect(Math.min(...q.values)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...q.values)).toBeLessThanOrEqual(15);
    // Rounding moves a weight by at most half a step, max|block| / 14.
    const back = dequantizeWeight(q).data;
    for (let i = 0; i < weight.length; i++) {
      const [row, column] = [Math.floor(i / 5), i % 5];
      expect(Math.abs(back[i]! - weight[i]!)).toBeLessThanOrEqual(q.scales[column * 3 + Math.floor(row / 32)]! / 2 + 1e-7);
    }
  });
});

describe('4-bit quantizedMatMul', () => {
  it.each([32, 128])('block %i: matches the float64 reference of its exact math (padded last block)', async (blockSize) => {
    const [inFeatures, outFeatures] = [blockSize * 2 + 16, 40];
    const random = new SeededRandom(Date.now() + blockSize);
    const weight = random.uniformWithStd(inFeatures * outFeatures, 0.05);
    const x = random.uniformWithStd(6 * inFeatures, 1);
    const q = quantizePerColumn(weight, inFeatures, outFeatures, blockSize, 4);
    const g = new GraphBuilder('q4_matmul');
    const input = g.input('x', 'float32', ['rows', inFeatures]);
    g.output(quantizedMatMul(g, input, 'proj', q), 'y', 'float32', ['rows', outFeatures]);
    const { y } = await runAsFloat64(await createSession(g), { x: floatTensor('float32', [6, inFeatures], x) });

    expect(relativeError(y!.data, quantizedMatMulReference(refTensor([6, inFeatures], x), q).data)).toBeLessThan(1e-5);
    // And within 4-bit rounding of the fp32 product (≈ 7 % of the scale for uniform weights;
    // a wrong nibble order or zero point gives ≈ 100 %).
    const exact = refMatMul(refTensor([6, inFeatures], x), refTensor([inFeatures, outFeatures], weight));
    expect(relativeError(y!.data, exact.data)).toBeLessThan(0.12);
  });

  it('runs in a float16 graph (q4f16) with float16 scales', async () => {
    const [inFeatures, outFeatures] = [64, 24];
    const random = new SeededRandom(Date.now() + 5);
    const weight = random.uniformWithStd(inFeatures * outFeatures, 0.05);
    const x = random.uniformWithStd(3 * inFeatures, 1);
    const q = quantizePerColumn(weight, inFeatures, outFeatures, 32, 4);
    const g = new GraphBuilder('q4f16_matmul', 'float16');
    const input = g.input('x', 'float16', ['rows', inFeatures]);
    g.output(quantizedMatMul(g, input, 'proj', q), 'y', 'float16', ['rows', outFeatures]);
    const { y } = await runAsFloat64(await createSession(g), { x: floatTensor('float16', [3, inFeatures], x) });
    const x16 = fromFloat16Array(floatTensor('float16', [3, inFeatures], x).data as Uint16Array);
    const weightOnly = refMatMul(refTensor([3, inFeatures], x16), dequantizeWeight(q));
    expect(relativeError(y!.data, weightOnly.data)).toBeLessThan(2e-2);
  });
});

describe('4-bit quantizedTiedEmbedding', () => {
  it('unpacks the nibbles of the gathered rows and projects through the same table', async () => {
    const random = new SeededRandom(Date.now() + 6);
    const [vocab, hidden] = [300, 80];
    const table = random.uniformWithStd(vocab * hidden, 0.5);
    const g = new GraphBuilder('q4_tied_embedding');
    const ids = g.input('input_ids', 'int64', ['batch_size', 'seq']);
    const h = g.input('h', 'float32', ['batch_size', hidden]);
    const tied = quantizedTiedEmbedding(g, 'model.embed_tokens', table, vocab, hidden, { bits: 4, blockSize: 32 });
    g.output(tied.lookup(ids), 'embeddings', 'float32', ['batch_size', 'seq', hidden]);
    g.output(tied.lmHead(h), 'logits', 'float32', ['batch_size', vocab]);
    // Half a byte per weight (3 blocks of 16 bytes) plus a 4-byte scale per block.
    expect(g.toModel().byteLength).toBeLessThan(vocab * 3 * (16 + 4) + 4096);

    const tokenIds = random.ints(6, vocab);
    const x = random.uniformWithStd(2 * hidden, 1);
    const out = await runAsFloat64(await createSession(g), { input_ids: int64Tensor([2, 3], tokenIds), h: floatTensor('float32', [2, hidden], x) });
    expect(relativeError(out.embeddings!.data, embeddingLookupReference(tokenIds, [2, 3], tied.weight).data)).toBeLessThan(1e-6);
    expect(relativeError(out.logits!.data, quantizedMatMulReference(refTensor([2, hidden], x), tied.weight).data)).toBeLessThan(1e-5);
  });
});
