import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { floatTensor, int64Tensor } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import { applyRotary, rotaryReference, rotaryTables } from '../../../kernels/rotary-embedding.js';
import { causalGqaAttention, causalGqaAttentionReference, causalMask } from '../../../kernels/causal-gqa-attention.js';
import { swigluMlp, swigluMlpReference, type SwigluWeights } from '../../../kernels/swiglu-mlp.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

const random = new SeededRandom(Date.now());

describe('rotary embedding', () => {
  it.each([10_000, 1_000_000])('matches the reference with theta %d, including large positions', async (theta) => {
    const [batch, heads, seq, dim] = [2, 3, 5, 16];
    const g = new GraphBuilder('rotary');
    const x = g.input('x', 'float32', [batch, heads, seq, dim]);
    const positions = g.input('position_ids', 'int64', [batch, seq]);
    g.output(applyRotary(g, x, rotaryTables(g, positions, dim, theta)), 'y', 'float32', [batch, heads, seq, dim]);
    const input = random.uniformWithStd(batch * heads * seq * dim, 1);
    const positionValues = random.ints(batch * seq, 4096);

    const { y } = await runAsFloat64(await createSession(g), {
      x: floatTensor('float32', [batch, heads, seq, dim], input),
      position_ids: int64Tensor([batch, seq], positionValues),
    });
    const expected = rotaryReference(refTensor([batch, heads, seq, dim], input), positionValues, theta);
    expect(relativeError(y!.data, expected.data)).toBeLessThan(1e-5);
  });
});

describe('causal grouped-query attention', () => {
  /** The graph's error against the reference with the same window; `fullError`: the windowed graph against full causal attention (so a window that changed nothing shows). */
  async function run(past: number, seq: number, mask: number[], slidingWindow?: number): Promise<{ error: number; fullError: number }> {
    const [batch, heads, kvHeads, dim] = [2, 4, 2, 8];
    const total = past + seq;
    const g = new GraphBuilder('attention');
    const q = g.input('q', 'float32', [batch, heads, seq, dim]);
    const k = g.input('k', 'float32', [batch, kvHeads, seq, dim]);
    const v = g.input('v', 'float32', [batch, kvHeads, seq, dim]);
    const pk = g.input('past_key', 'float32', [batch, kvHeads, past, dim]);
    const pv = g.input('past_value', 'float32', [batch, kvHeads, past, dim]);
    const am = g.input('attention_mask', 'int64', [batch, total]);
    const ids = g.input('input_ids', 'int64', [batch, seq]);
    const result = causalGqaAttention(g, {
      query: q,
      key: k,
      value: v,
      pastKey: pk,
      pastValue: pv,
      mask: causalMask(g, am, ids, heads / kvHeads, slidingWindow),
      numHeads: heads,
      numKvHeads: kvHeads,
      headDim: dim,
    });
    g.output(result.output, 'out', 'float32', [batch, seq, heads * dim]);
    g.output(result.presentKey, 'present_key', 'float32', [batch, kvHeads, total, dim]);

    const data = (n: number): Float32Array => random.uniformWithStd(n, 1.5);
    const [qd, kd, vd] = [data(batch * heads * seq * dim), data(batch * kvHeads * seq * dim), data(batch * kvHeads * seq * dim)];
    const [pkd, pvd] = [data(batch * kvHeads * past * dim), data(batch * kvHeads * past * dim)];
    const outputs = await runAsFloat64(await createSession(g), {
      q: floatTensor('float32', [batch, heads, seq, dim], qd),
      k: floatTensor('float32', [batch, kvHeads, seq, dim], kd),
      v: floatTensor('float32', [batch, kvHeads, seq, dim], vd),
      past_key: floatTensor('float32', [batch, kvHeads, past, dim], pkd),
      past_value: floatTensor('float32', [batch, kvHeads, past, dim], pvd),
      attention_mask: int64Tensor([batch, total], mask),
      input_ids: int64Tensor([batch, seq], new Array(batch * seq).fill(0)),
    });
    // Reference keys/values: [past ; new] per batch and kv head.
    const concat = (pastData: Float32Array, newData: Float32Array) => {
      const out = new Float64Array(batch * kvHeads * total * dim);
      for (let bh = 0; bh < batch * kvHeads; bh++) {
        out.set(pastData.subarray(bh * past * dim, (bh + 1) * past * dim), bh * total * dim);
        out.set(newData.subarray(bh * seq * dim, (bh + 1) * seq * dim), bh * total * dim + past * dim);
      }
      return refTensor([batch, kvHeads, total, dim], out);
    };
    const keys = concat(pkd, kd);
    const reference = (window?: number) => causalGqaAttentionReference(refTensor([batch, heads, seq, dim], qd), keys, concat(pvd, vd), mask, window);
    expect(relativeError(outputs.present_key!.data, keys.data)).toBe(0);
    return { error: relativeError(outputs.out!.data, reference(slidingWindow).data), fullError: relativeError(outputs.out!.data, reference().data) };
  }
  const compare = async (past: number, seq: number, mask: number[]): Promise<number> => (await run(past, seq, mask)).error;

  it('prefill without past (causal only)', async () => {
    expect(await compare(0, 6, new Array(12).fill(1))).toBeLessThan(1e-5);
  });
  it('decode step over a past, with left padding in one row', async () => {
    expect(await compare(7, 1, [...new Array(8).fill(1), 0, 0, 0, 1, 1, 1, 1, 1])).toBeLessThan(1e-5);
  });
  it('chunk over a past with padded, fully masked query rows', async () => {
    expect(await compare(3, 4, [...new Array(7).fill(1), 0, 0, 0, 0, 0, 1, 1])).toBeLessThan(1e-5);
  });

  describe('sliding window', () => {
    it('a prefill longer than the window', async () => {
      const { error, fullError } = await run(0, 10, new Array(20).fill(1), 3);
      expect(error).toBeLessThan(1e-5);
      expect(fullError).toBeGreaterThan(1e-2);
    });
    it('a decode step whose past is longer than the window, one row left-padded', async () => {
      const { error, fullError } = await run(12, 1, [...new Array(13).fill(1), 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1], 4);
      expect(error).toBeLessThan(1e-5);
      expect(fullError).toBeGreaterThan(1e-2);
    });
    it('counts positions over attended keys: pads between a row’s past and its new tokens (a shorter chunk in a padded call)', async () => {
      // Row 1 as the PastKeyValuesRunner lays it out: its past left-padded, then its 2 new tokens after 2 pads.
      const row0 = new Array(10).fill(1);
      const row1 = [0, 0, 1, 1, 1, 1, 0, 0, 1, 1];
      const { error, fullError } = await run(6, 4, [...row0, ...row1], 3);
      expect(error).toBeLessThan(1e-5);
      expect(fullError).toBeGreaterThan(1e-2);
    });
    it('window 1: each query sees only itself', async () => {
      expect((await run(5, 3, [...new Array(8).fill(1), 0, 0, 1, 1, 1, 1, 1, 1], 1)).error).toBeLessThan(1e-5);
    });
    it('a window at least the context is full causal attention', async () => {
      const { error, fullError } = await run(5, 3, new Array(16).fill(1), 8);
      expect(error).toBeLessThan(1e-5);
      expect(fullError).toBeLessThan(1e-5);
    });
  });
});

describe('SwiGLU MLP', () => {
  it('matches the reference', async () => {
    const [rows, hidden, inter] = [3, 24, 40];
    const lin = (i: number, o: number) => ({ inFeatures: i, outFeatures: o, weight: random.uniformWithStd(i * o, 0.3) });
    const weights: SwigluWeights = { gate: lin(hidden, inter), up: lin(hidden, inter), down: lin(inter, hidden) };
    const g = new GraphBuilder('swiglu');
    const x = g.input('x', 'float32', [rows, hidden]);
    g.output(swigluMlp(g, x, weights, 'fp32'), 'y', 'float32', [rows, hidden]);
    const input = random.uniformWithStd(rows * hidden, 1);
    const { y } = await runAsFloat64(await createSession(g), { x: floatTensor('float32', [rows, hidden], input) });
    expect(relativeError(y!.data, swigluMlpReference(refTensor([rows, hidden], input), weights).data)).toBeLessThan(1e-5);
  });
});
