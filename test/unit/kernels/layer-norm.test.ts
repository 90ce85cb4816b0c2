import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { floatTensor } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import { layerNorm, layerNormReference } from '../../../kernels/layer-norm.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

describe('layerNorm', () => {
  it('matches the float64 reference on fresh random inputs', async () => {
    const random = new SeededRandom(Date.now());
    const [rows, width, epsilon] = [6, 40, 1e-12];
    const weight = random.uniformWithStd(width, 1);
    const bias = random.uniformWithStd(width, 0.5);
    const g = new GraphBuilder('layer_norm');
    const x = g.input('x', 'float32', ['rows', width]);
    const y = layerNorm(g, x, g.weight('weight', [width], weight), g.weight('bias', [width], bias), epsilon);
    g.output(y, 'y', 'float32', ['rows', width]);
    // An offset per element so a kernel that skipped the mean subtraction would fail.
    const input = random.uniformWithStd(rows * width, 2).map((v, i) => v + (i % 7) - 1);

    const { y: actual } = await runAsFloat64(await createSession(g), { x: floatTensor('float32', [rows, width], input) });
    const expected = layerNormReference(refTensor([rows, width], input), weight, bias, epsilon);
    expect(relativeError(actual!.data, expected.data)).toBeLessThan(1e-5);
  });
});
