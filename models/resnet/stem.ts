// The ResNet stem: 7×7 stride-2 conv-BN-ReLU, then 3×3 stride-2 max pooling (224 → 112 → 56).

import { convBn, convBnReference, outputSize, type ConvBnLayer } from '../../kernels/conv-block.js';
import type { Precision } from '../../kernels/linear.js';
import type { GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import type { Int8ConvFormulation } from '../../kernels/quantized-conv.js';
import type { RefTensor } from '../../kernels/reference/tensor.js';

const POOL = { kernel: 3, stride: 2, pad: 1 } as const;

export function stem(g: GraphBuilder, x: string, layer: ConvBnLayer, precision: Precision, int8?: Int8ConvFormulation): string {
  const y = convBn(g, x, { conv: 'conv1', bn: 'bn1' }, layer, precision, true, int8);
  const { kernel, stride, pad } = POOL;
  return g.op1('MaxPool', [y], { kernel_shape: [kernel, kernel], strides: [stride, stride], pads: [pad, pad, pad, pad] }, { name: 'maxpool' });
}

export function stemReference(x: RefTensor, layer: ConvBnLayer): RefTensor {
  return maxPoolReference(convBnReference(x, layer, true));
}

/** MaxPool with ONNX semantics: padded positions never win. */
export function maxPoolReference(x: RefTensor): RefTensor {
  const [n, c, h, w] = x.dims as [number, number, number, number];
  const { kernel, stride, pad } = POOL;
  const [oh, ow] = [outputSize(h, kernel, stride, pad), outputSize(w, kernel, stride, pad)];
  const out = new Float64Array(n * c * oh * ow);
  for (let p = 0; p < n * c; p++) {
    for (let y = 0; y < oh; y++) {
      for (let xo = 0; xo < ow; xo++) {
        let best = -Infinity;
        for (let ky = 0; ky < kernel; ky++) {
          const iy = y * stride - pad + ky;
          if (iy < 0 || iy >= h) continue;
          for (let kx = 0; kx < kernel; kx++) {
            const ix = xo * stride - pad + kx;
            if (ix >= 0 && ix < w) best = Math.max(best, x.data[(p * h + iy) * w + ix]!);
          }
        }
        out[(p * oh + y) * ow + xo] = best;
      }
    }
  }
  return { dims: [n, c, oh, ow], data: out };
}
