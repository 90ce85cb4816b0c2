import { describe, expect, it } from 'vitest';
import { concatColumns, fusedLinear, type LinearWeights, linear, type WeightPrecision } from '../../../kernels/linear.js';
import { floatTensor } from '../../../kernels/onnx/dtypes.js';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

const random = new SeededRandom(Date.now());
const part = (inFeatures: number, outFeatures: number, bias = false): LinearWeights => ({
  inFeatures,
  outFeatures,
  weight: random.uniformWithStd(inFeatures * outFeatures, 0.2),
  ...(bias ? { bias: random.uniformWithStd(outFeatures, 0.1) } : {}),
});

describe('concatColumns', () => {
  it('puts each part’s columns side by side, row by row, biases likewise (zeros where a part has none)', () => {
    const a = { inFeatures: 2, outFeatures: 1, weight: Float32Array.from([1, 2]), bias: Float32Array.from([9]) };
    const b = { inFeatures: 2, outFeatures: 2, weight: Float32Array.from([3, 4, 5, 6]) };
    const fused = concatColumns([a, b]);
    expect(fused.outFeatures).toBe(3);
    expect(Array.from(fused.weight)).toEqual([1, 3, 4, 2, 5, 6]);
    expect(Array.from(fused.bias!)).toEqual([9, 0, 0]);
    expect(() => concatColumns([a, { ...b, inFeatures: 3, weight: new Float32Array(6) }])).toThrow(/input widths 2 and 3/);
  });
});

describe('fusedLinear', () => {
  it.each<[WeightPrecision, number]>([
    ['fp32', 1e-6],
    ['int8', 1e-6],
    ['q4', 1e-6],
  ])('%s: one MatMul split back gives each separate linear’s output', async (precision, tolerance) => {
    const [rows, width] = [3, 64];
    const parts = [part(width, 64, true), part(width, 32, true), part(width, 32, true)];
    const g = new GraphBuilder('fused');
    const x = g.input('x', 'float32', [rows, width]);
    fusedLinear(g, x, 'qkv', parts, precision).forEach((y, i) => g.output(y, `fused_${i}`, 'float32', [rows, parts[i]!.outFeatures]));
    parts.forEach((p, i) => g.output(linear(g, x, `separate_${i}`, p, precision), `separate_${i}`, 'float32', [rows, p.outFeatures]));

    const out = await runAsFloat64(await createSession(g), { x: floatTensor('float32', [rows, width], random.uniformWithStd(rows * width, 1)) });
    for (let i = 0; i < parts.length; i++) expect(relativeError(out[`fused_${i}`]!.data, out[`separate_${i}`]!.data)).toBeLessThan(tolerance);
  });
});
