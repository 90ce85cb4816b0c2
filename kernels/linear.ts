// A linear layer in the precision of the variant being built: fp32 or fp16 weights (the graph's
// float type) or 8-bit block-quantized weights (kernels/quantized-matmul.ts). Every model builder goes through here, so
// a variant is one argument, not a second builder.

import type { GraphBuilder } from './onnx/graph-builder.js';
import { quantizePerColumn, quantizedMatMul } from './quantized-matmul.js';

export type Precision = 'fp32' | 'fp16' | 'int8';

export interface LinearWeights {
  readonly inFeatures: number;
  readonly outFeatures: number;
  /** [inFeatures, outFeatures] row-major (ONNX MatMul's B layout). */
  readonly weight: Float32Array;
  readonly bias?: Float32Array;
}

/** Initializers are named `{name}.weight` / `{name}.bias` inside the current scope. */
export function linear(g: GraphBuilder, x: string, name: string, w: LinearWeights, precision: Precision): string {
  let y: string;
  if (precision === 'int8') {
    y = quantizedMatMul(g, x, name, quantizePerColumn(w.weight, w.inFeatures, w.outFeatures));
  } else {
    y = g.op1('MatMul', [x, g.weight(`${name}.weight`, [w.inFeatures, w.outFeatures], w.weight)]);
  }
  if (!w.bias) return y;
  // Biases stay in the graph's float type: they are tiny and quantizing them buys nothing.
  return g.op1('Add', [y, g.weight(`${name}.bias`, [w.outFeatures], w.bias)]);
}
