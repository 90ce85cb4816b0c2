import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { floatTensor } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import { addRmsNorm, rmsNorm, rmsNormReference } from '../../../kernels/rms-norm.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

describe('rmsNorm', () => {
  it('matches the float64 reference on fresh random inputs', async () => {
    const random = new SeededRandom(Date.now());
    const [rows, width, epsilon] = [5, 48, 1e-6];
    const weights = random.uniformWithStd(width, 1);
    const g = new GraphBuilder('rms_norm');
    const x = g.input('x', 'float32', ['rows', width]);
    g.output(rmsNorm(g, x, g.weight('weight', [width], weights), epsilon), 'y', 'float32', ['rows', width]);
    const input = random.uniformWithStd(rows * width, 2);

    const { y } = await runAsFloat64(await createSession(g), { x: floatTensor('float32', [rows, width], input) });
    const expected = rmsNormReference(refTensor([rows, width], input), Float64Array.from(weights), epsilon);
    expect(relativeError(y!.data, expected.data)).toBeLessThan(1e-5);
  });

  it("addRmsNorm: one node returns the residual sum and the sum's norm, as the reference", async () => {
    const random = new SeededRandom(Date.now());
    const [rows, width, epsilon] = [7, 64, 1e-6];
    const weights = random.uniformWithStd(width, 1);
    const g = new GraphBuilder('add_rms_norm');
    const [x, delta] = [g.input('x', 'float32', ['rows', width]), g.input('delta', 'float32', ['rows', width])];
    const { sum, normed } = addRmsNorm(g, x, delta, g.weight('weight', [width], weights), epsilon);
    g.output(sum, 'sum', 'float32', ['rows', width]);
    g.output(normed, 'y', 'float32', ['rows', width]);
    const [a, b] = [random.uniformWithStd(rows * width, 2), random.uniformWithStd(rows * width, 0.5)];

    const out = await runAsFloat64(await createSession(g), { x: floatTensor('float32', [rows, width], a), delta: floatTensor('float32', [rows, width], b) });
    const added = Float64Array.from(a, (value, i) => Math.fround(value + b[i]!));
    expect(relativeError(out.sum!.data, added)).toBeLessThan(1e-7);
    const expected = rmsNormReference(refTensor([rows, width], added), Float64Array.from(weights), epsilon);
    expect(relativeError(out.y!.data, expected.data)).toBeLessThan(1e-5);
  });
});
