import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { floatTensor, int64Tensor } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import type { LinearWeights } from '../../../kernels/linear.js';
import { encoderSelfAttention, encoderSelfAttentionReference, paddingMask, type EncoderAttentionWeights } from '../../../kernels/encoder-attention.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

function randomLinear(random: SeededRandom, inFeatures: number, outFeatures: number): LinearWeights {
  const weight = random.uniformWithStd(inFeatures * outFeatures, 1 / Math.sqrt(inFeatures));
  return { inFeatures, outFeatures, weight, bias: random.uniformWithStd(outFeatures, 0.1) };
}

function randomAttention(random: SeededRandom, hidden: number): EncoderAttentionWeights {
  const [query, key, value, output] = Array.from({ length: 4 }, () => randomLinear(random, hidden, hidden)) as [LinearWeights, LinearWeights, LinearWeights, LinearWeights];
  return { query, key, value, output };
}

async function attentionSession(w: EncoderAttentionWeights, hidden: number, heads: number) {
  const g = new GraphBuilder('encoder_attention');
  const x = g.input('x', 'float32', ['batch', 'seq', hidden]);
  const mask = g.input('attention_mask', 'int64', ['batch', 'seq']);
  g.output(encoderSelfAttention(g, x, paddingMask(g, mask), w, heads, 'fp32'), 'y', 'float32', ['batch', 'seq', hidden]);
  return createSession(g);
}

describe('encoderSelfAttention', () => {
  const [batch, seq, hidden, heads] = [3, 5, 24, 4];
  // Row 0 full, row 1 right-padded, row 2 fully masked (must stay finite: the mean of the values).
  const maskValues = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];

  it('matches the float64 reference on fresh random inputs', async () => {
    const random = new SeededRandom(Date.now());
    const weights = randomAttention(random, hidden);
    const input = random.uniformWithStd(batch * seq * hidden, 1);

    const { y } = await runAsFloat64(await attentionSession(weights, hidden, heads), {
      x: floatTensor('float32', [batch, seq, hidden], input),
      attention_mask: int64Tensor([batch, seq], maskValues),
    });
    const expected = encoderSelfAttentionReference(refTensor([batch, seq, hidden], input), maskValues, weights, heads);
    expect(y!.data.every(Number.isFinite)).toBe(true);
    expect(relativeError(y!.data, expected.data)).toBeLessThan(1e-5);
  });

  it('makes masked keys invisible: changing padded positions leaves real positions unchanged', async () => {
    const random = new SeededRandom(Date.now() + 1);
    const weights = randomAttention(random, hidden);
    const session = await attentionSession(weights, hidden, heads);
    const input = random.uniformWithStd(batch * seq * hidden, 1);
    const changed = input.slice();
    for (let s = 3; s < seq; s++) changed.fill(7, (seq + s) * hidden, (seq + s + 1) * hidden); // row 1's padding
    const run = async (values: Float32Array) =>
      (await runAsFloat64(session, { x: floatTensor('float32', [batch, seq, hidden], values), attention_mask: int64Tensor([batch, seq], maskValues) })).y!.data;
    const [before, after] = [await run(input), await run(changed)];
    const realRow1 = (data: Float64Array) => data.subarray(seq * hidden, (seq + 3) * hidden);
    expect(relativeError(realRow1(after), realRow1(before))).toBeLessThan(1e-6);
    expect(relativeError(after.subarray(0, seq * hidden), before.subarray(0, seq * hidden))).toBe(0);
  });
});
