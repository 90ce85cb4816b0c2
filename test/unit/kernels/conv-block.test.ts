import { describe, expect, it } from 'vitest';
import { basicBlock, basicBlockReference, batchNormReference, conv2dReference, convBn, convBnReference, type BasicBlockWeights, type ConvBnLayer } from '../../../kernels/conv-block.js';
import type { Precision } from '../../../kernels/linear.js';
import { floatTensor } from '../../../kernels/onnx/dtypes.js';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import type { Int8ConvFormulation } from '../../../kernels/quantized-conv.js';
import { refTensor, type RefTensor } from '../../../kernels/reference/tensor.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

const random = new SeededRandom(Date.now());

function randomLayer(inChannels: number, outChannels: number, kernel: number, stride: number): ConvBnLayer {
  const positive = (n: number) => Float32Array.from(random.uniformWithStd(n, 0.25), (v) => 1 + v);
  return {
    inChannels,
    outChannels,
    kernel,
    stride,
    weight: random.uniformWithStd(outChannels * inChannels * kernel * kernel, Math.sqrt(2 / (inChannels * kernel * kernel))),
    bn: { gamma: positive(outChannels), beta: random.uniformWithStd(outChannels, 0.2), runningMean: random.uniformWithStd(outChannels, 0.3), runningVar: positive(outChannels) },
  };
}

/** The layer with the activation ranges the reference sees, as a model builder's calibration would record them. */
function calibrated(layer: ConvBnLayer, x: RefTensor): ConvBnLayer {
  const y = batchNormReference(conv2dReference(x, layer.weight, layer.outChannels, layer.kernel, layer.stride), layer.bn);
  const range = (t: RefTensor) => ({ min: Math.min(...t.data), max: Math.max(...t.data) });
  return { ...layer, inputRange: range(x), outputRange: range(y) };
}

async function run(build: (g: GraphBuilder, x: string) => string, precision: Precision, dims: number[], input: Float32Array) {
  const g = new GraphBuilder('conv_block', precision === 'fp16' ? 'float16' : 'float32');
  const dtype = precision === 'fp16' ? 'float16' : 'float32';
  const x = g.input('x', dtype, ['n', ...dims.slice(1)]);
  g.output(build(g, x), 'y', dtype, ['n', 'c', 'h', 'w']);
  const { y } = await runAsFloat64(await createSession(g), { x: floatTensor(dtype, dims, input) });
  return y!.data;
}

describe('convBn', () => {
  const shapes: [number, number, number, number, boolean][] = [
    [3, 5, 3, 1, true],
    [4, 6, 3, 2, false],
    [3, 4, 7, 2, true],
    [5, 7, 1, 2, false],
  ];
  it.each(shapes)('in %i out %i kernel %i stride %i relu %s matches the float64 reference in fp32', async (cin, cout, k, s, relu) => {
    const layer = randomLayer(cin, cout, k, s);
    const dims = [2, cin, 11, 9];
    const input = random.uniformWithStd(
      dims.reduce((a, b) => a * b),
      1,
    );
    const actual = await run((g, x) => convBn(g, x, { conv: 'conv', bn: 'bn' }, layer, 'fp32', relu), 'fp32', dims, input);
    expect(relativeError(actual, convBnReference(refTensor(dims, input), layer, relu).data)).toBeLessThan(1e-5);
  });

  const variants: [Precision, Int8ConvFormulation | undefined, number][] = [
    ['fp16', undefined, 5e-3],
    ['int8', 'qdq-weight', 3e-2],
    ['int8', 'conv-integer', 3e-2],
    ['int8', 'qlinear', 4e-2],
    ['int8', 'qdq', 4e-2],
  ];
  it.each(variants)('%s %s stays close to the float64 reference', async (precision, formulation, tolerance) => {
    const dims = [2, 8, 10, 10];
    const input = random.uniformWithStd(
      dims.reduce((a, b) => a * b),
      1,
    );
    const layer = calibrated(randomLayer(8, 16, 3, 1), refTensor(dims, input));
    const build = (g: GraphBuilder, x: string) => convBn(g, x, { conv: 'conv', bn: 'bn' }, layer, precision, true, formulation);
    const actual = await run(build, precision, dims, input);
    expect(relativeError(actual, convBnReference(refTensor(dims, input), layer, true).data)).toBeLessThan(tolerance);
  });
});

describe('basicBlock', () => {
  it.each([false, true])('projection shortcut %s matches the float64 reference in fp32', async (projection) => {
    const [cin, cout, stride] = projection ? [4, 8, 2] : [6, 6, 1];
    const block: BasicBlockWeights = {
      conv1: randomLayer(cin, cout, 3, stride),
      conv2: randomLayer(cout, cout, 3, 1),
      ...(projection ? { downsample: randomLayer(cin, cout, 1, stride) } : {}),
    };
    const dims = [2, cin, 10, 9];
    const input = random.uniformWithStd(
      dims.reduce((a, b) => a * b),
      1,
    );
    const actual = await run((g, x) => basicBlock(g, x, block, 'fp32'), 'fp32', dims, input);
    expect(relativeError(actual, basicBlockReference(refTensor(dims, input), block).data)).toBeLessThan(1e-5);
  });
});
