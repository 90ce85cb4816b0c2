// The ResNet-style classifier graph:
//   input  `input`  float32 [batch_size, 3, 224, 224] (ImageNet-normalized pixels)
//   output `logits` float32 [batch_size, 1000]
// Every variant keeps this I/O, so the server swaps fp32 / fp16 / int8 behind one config: the
// fp16 variant casts at the boundaries and computes in float16 inside.

import { basicBlock } from '../../kernels/conv-block.js';
import { globalAveragePool } from '../../kernels/global-average-pool.js';
import { linear, type Precision } from '../../kernels/linear.js';
import { ONNX_DATA_TYPE } from '../../kernels/onnx/dtypes.js';
import { GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import type { EncodedMessage } from '../../kernels/onnx/protobuf-writer.js';
import type { Int8ConvFormulation } from '../../kernels/quantized-conv.js';
import type { ResnetConfig } from './config.js';
import { stem } from './stem.js';
import type { ResnetWeights } from './weights.js';

export function buildResnetGraph(c: ResnetConfig, weights: ResnetWeights, precision: Precision, int8?: Int8ConvFormulation): EncodedMessage {
  const g = new GraphBuilder('resnet', precision === 'fp16' ? 'float16' : 'float32');
  const input = g.input('input', 'float32', ['batch_size', 3, c.imageSize, c.imageSize]);
  let x = precision === 'fp16' ? g.op1('Cast', [input], { to: ONNX_DATA_TYPE.float16 }) : input;
  x = stem(g, x, weights.stem, precision, int8);
  weights.stages.forEach((blocks, s) => {
    blocks.forEach((block, b) => {
      x = g.scope(`layer${s + 1}.${b}`, () => basicBlock(g, x, block, precision, int8));
    });
  });
  let logits = linear(g, globalAveragePool(g, x), 'fc', weights.fc, precision);
  if (precision === 'fp16') logits = g.op1('Cast', [logits], { to: ONNX_DATA_TYPE.float32 });
  g.output(logits, 'logits', 'float32', ['batch_size', c.numClasses]);
  return g.toModel({
    docString: 'ResNet-style image classifier with deterministic random weights (Conveyor test/bench model).',
    metadata: { precision, stages: c.widths.map((w, s) => `${w}x${c.blocksPerStage[s]}`).join(',') },
  });
}
