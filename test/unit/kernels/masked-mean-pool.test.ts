import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { floatTensor, int64Tensor } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import { maskedMeanPool, maskedMeanPoolReference } from '../../../kernels/masked-mean-pool.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

describe('maskedMeanPool', () => {
  it('matches the float64 reference on fresh random inputs, with unit-norm rows', async () => {
    const random = new SeededRandom(Date.now());
    const [batch, seq, width] = [3, 6, 20];
    const g = new GraphBuilder('masked_mean_pool');
    const hidden = g.input('hidden', 'float32', ['batch', 'seq', width]);
    const mask = g.input('attention_mask', 'int64', ['batch', 'seq']);
    g.output(maskedMeanPool(g, hidden, mask), 'embedding', 'float32', ['batch', width]);
    const input = random.uniformWithStd(batch * seq * width, 1).map((v, i) => v + (i % 3) * 0.5);
    const lengths = [seq, 1 + (random.nextUint32() % (seq - 1)), 2];
    const maskValues = lengths.flatMap((n) => Array.from({ length: seq }, (_, s) => (s < n ? 1 : 0)));

    const { embedding } = await runAsFloat64(await createSession(g), {
      hidden: floatTensor('float32', [batch, seq, width], input),
      attention_mask: int64Tensor([batch, seq], maskValues),
    });
    const expected = maskedMeanPoolReference(refTensor([batch, seq, width], input), maskValues);
    expect(relativeError(embedding!.data, expected.data)).toBeLessThan(1e-5);
    for (let b = 0; b < batch; b++) {
      const row = embedding!.data.subarray(b * width, (b + 1) * width);
      expect(Math.hypot(...row)).toBeCloseTo(1, 5);
    }
  });
});
