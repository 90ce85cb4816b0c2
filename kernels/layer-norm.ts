// LayerNorm (BERT): y = (x - mean) / sqrt(var + ε) · weight + bias over the last axis.
// The fused opset-17 LayerNormalization op is what Optimum exports for BERT, and ORT's CPU
// kernel accumulates in fp32 even for fp16 tensors, so the fp16 variant needs no casts here.

import { float, type GraphBuilder } from './onnx/graph-builder.js';
import type { RefTensor } from './reference/tensor.js';

export function layerNorm(g: GraphBuilder, x: string, weight: string, bias: string, epsilon: number): string {
  return g.op1('LayerNormalization', [x, weight, bias], { axis: -1, epsilon: float(epsilon) });
}

/** Float64 reference of layerNorm (population variance, as the op and PyTorch use). */
export function layerNormReference(x: RefTensor, weight: ArrayLike<number>, bias: ArrayLike<number>, epsilon: number): RefTensor {
  const width = weight.length;
  const out = new Float64Array(x.data.length);
  for (let row = 0; row < x.data.length / width; row++) {
    const base = row * width;
    let mean = 0;
    for (let i = 0; i < width; i++) mean += x.data[base + i]!;
    mean /= width;
    let variance = 0;
    for (let i = 0; i < width; i++) variance += (x.data[base + i]! - mean) ** 2;
    const scale = 1 / Math.sqrt(variance / width + epsilon);
    for (let i = 0; i < width; i++) out[base + i] = (x.data[base + i]! - mean) * scale * weight[i]! + bias[i]!;
  }
  return { dims: x.dims, data: out };
}
