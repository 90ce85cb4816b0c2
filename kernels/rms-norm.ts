// RMSNorm (LLaMA / Qwen): y = x / sqrt(mean(x², last axis) + ε) · weight.
// Written with standard ops so any ONNX runtime runs it; ORT fuses the pattern into
// SimplifiedLayerNormalization at load time.

import { float, type GraphBuilder, MS_DOMAIN } from './onnx/graph-builder.js';
import type { RefTensor } from './reference/tensor.js';

export function rmsNorm(g: GraphBuilder, x: string, weight: string, epsilon: number): string {
  const squared = g.op1('Pow', [x, g.floats(2)]);
  const meanSquare = g.op1('ReduceMean', [squared], { axes: [-1], keepdims: 1 });
  const rms = g.op1('Sqrt', [g.op1('Add', [meanSquare, g.floats(epsilon)])]);
  return g.op1('Mul', [g.op1('Div', [x, rms]), weight]);
}

/** Float64 reference of rmsNorm. */
export function rmsNormReference(x: RefTensor, weight: Float64Array, epsilon: number): RefTensor {
  const width = weight.length;
  const out = new Float64Array(x.data.length);
  for (let row = 0; row < x.data.length / width; row++) {
    let sum = 0;
    for (let i = 0; i < width; i++) sum += x.data[row * width + i]! ** 2;
    const scale = 1 / Math.sqrt(sum / width + epsilon);
    for (let i = 0; i < width; i++) out[row * width + i] = x.data[row * width + i]! * scale * weight[i]!;
  }
  return { dims: x.dims, data: out };
}

/**
 * `x + delta` (the residual add) and its RMSNorm in one node, ORT's SkipSimplifiedLayerNormalization
 * (com.microsoft): returns the sum, which the stream carries on, and the normalized sum. The op
 * adds in float32 and normalizes that sum; only the returned sum is rounded to the graph's type.
 */
export function addRmsNorm(g: GraphBuilder, x: string, delta: string, weight: string, epsilon: number): { sum: string; normed: string } {
  // Outputs: normed, mean and inv_std_var (training only, left unnamed), the sum.
  const [normed, , , sum] = g.op('SkipSimplifiedLayerNormalization', [x, delta, weight], { epsilon: float(epsilon) }, { domain: MS_DOMAIN, outputs: 4, unnamed: [1, 2] });
  return { sum: sum!, normed: normed! };
}
