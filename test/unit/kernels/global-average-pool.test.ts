import { describe, expect, it } from 'vitest';
import { globalAveragePool, globalAveragePoolReference } from '../../../kernels/global-average-pool.js';
import { floatTensor } from '../../../kernels/onnx/dtypes.js';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

describe('globalAveragePool', () => {
  it('matches the float64 reference on fresh random inputs', async () => {
    const random = new SeededRandom(Date.now());
    const dims = [3, 5, 7, 6];
    const g = new GraphBuilder('global_average_pool');
    const x = g.input('x', 'float32', ['n', 5, 'h', 'w']);
    g.output(globalAveragePool(g, x), 'y', 'float32', ['n', 5]);
    const input = random.uniformWithStd(
      dims.reduce((a, b) => a * b),
      2,
    );

    const { y } = await runAsFloat64(await createSession(g), { x: floatTensor('float32', dims, input) });
    expect(y!.dims).toEqual([3, 5]);
    expect(relativeError(y!.data, globalAveragePoolReference(refTensor(dims, input)).data)).toBeLessThan(1e-5);
  });
});
