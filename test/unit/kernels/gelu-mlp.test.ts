import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { floatTensor } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import { erf, gelu, geluMlp, geluMlpReference, type GeluMlpWeights } from '../../../kernels/gelu-mlp.js';
import type { LinearWeights } from '../../../kernels/linear.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

function randomLinear(random: SeededRandom, inFeatures: number, outFeatures: number): LinearWeights {
  const weight = random.uniformWithStd(inFeatures * outFeatures, 1 / Math.sqrt(inFeatures));
  return { inFeatures, outFeatures, weight, bias: random.uniformWithStd(outFeatures, 0.1) };
}

describe('geluMlp', () => {
  it('matches the float64 reference on fresh random inputs', async () => {
    const random = new SeededRandom(Date.now());
    const [batch, seq, hidden, intermediate] = [2, 3, 24, 56];
    const w: GeluMlpWeights = { intermediate: randomLinear(random, hidden, intermediate), output: randomLinear(random, intermediate, hidden) };
    const g = new GraphBuilder('gelu_mlp');
    const x = g.input('x', 'float32', ['batch', 'seq', hidden]);
    g.output(geluMlp(g, x, w, 'fp32'), 'y', 'float32', ['batch', 'seq', hidden]);
    const input = random.uniformWithStd(batch * seq * hidden, 1.5);

    const { y } = await runAsFloat64(await createSession(g), { x: floatTensor('float32', [batch, seq, hidden], input) });
    const expected = geluMlpReference(refTensor([batch, seq, hidden], input), w);
    expect(relativeError(y!.data, expected.data)).toBeLessThan(1e-5);
  });

  it('is the erf form of GELU, not the tanh approximation', async () => {
    // The tanh form differs from the erf form by up to ~5e-4 on this range; the graph must not.
    const points = Array.from({ length: 49 }, (_, i) => -4 + i / 6);
    const g = new GraphBuilder('gelu');
    const z = g.input('z', 'float32', [points.length]);
    g.output(gelu(g, z), 'y', 'float32', [points.length]);
    const { y } = await runAsFloat64(await createSession(g), { z: floatTensor('float32', [points.length], points) });
    const exact = points.map((v) => 0.5 * Math.fround(v) * (1 + erf(Math.fround(v) / Math.SQRT2)));
    for (let i = 0; i < points.length; i++) expect(Math.abs(y!.data[i]! - exact[i]!)).toBeLessThan(2e-6);
    // erf itself against values known to 16 digits.
    expect(erf(0.5)).toBeCloseTo(0.5204998778130465, 14);
    expect(erf(-1.7)).toBeCloseTo(-0.9837904585907746, 14);
    expect(1 - erf(4)).toBeCloseTo(1.541725790028002e-8, 14);
  });
});
