// Sentence embedding as sentence-transformers computes it: the mean of the token vectors over
// the positions whose attention_mask is 1, then L2-normalised (so cosine similarity is a dot
// product). Always computed in float32: a sum over the sequence and a norm are where fp16 loses
// precision, and the embedding leaves the graph as float32 in every variant anyway.

import type { GraphBuilder } from './onnx/graph-builder.js';
import type { RefTensor } from './reference/tensor.js';

/** Clamps as sentence-transformers does (token count ≥ 1e-9, norm ≥ 1e-12), so an all-padding row is 0, not NaN. */
const MIN_COUNT = 1e-9;
const MIN_NORM = 1e-12;

/** hidden [B, S, H] float32, attentionMask [B, S] int64 → [B, H] float32 with unit L2 norm. */
export function maskedMeanPool(g: GraphBuilder, hidden: string, attentionMask: string): string {
  const weights = g.op1('Unsqueeze', [g.op1('Cast', [attentionMask], { to: 1 }), g.ints([2])]); // [B, S, 1]
  const summed = g.op1('ReduceSum', [g.op1('Mul', [hidden, weights]), g.ints([1])], { keepdims: 0 }); // [B, H]
  const count = g.op1('ReduceSum', [weights, g.ints([1])], { keepdims: 0 }); // [B, 1]
  const mean = g.op1('Div', [summed, g.op1('Max', [count, g.floats(MIN_COUNT, 'float32')])]);
  const squared = g.op1('ReduceSum', [g.op1('Mul', [mean, mean]), g.ints([-1])], { keepdims: 1 }); // [B, 1]
  const norm = g.op1('Max', [g.op1('Sqrt', [squared]), g.floats(MIN_NORM, 'float32')]);
  return g.op1('Div', [mean, norm]);
}

/** Float64 reference. hidden [B, S, H], mask [B·S] of 0/1. */
export function maskedMeanPoolReference(hidden: RefTensor, mask: ArrayLike<number>): RefTensor {
  const [batch, seq, width] = hidden.dims as [number, number, number];
  const out = new Float64Array(batch * width);
  for (let b = 0; b < batch; b++) {
    let count = 0;
    for (let s = 0; s < seq; s++) {
      const m = mask[b * seq + s]!;
      count += m;
      for (let i = 0; i < width; i++) out[b * width + i]! += m * hidden.data[(b * seq + s) * width + i]!;
    }
    let squared = 0;
    for (let i = 0; i < width; i++) {
      out[b * width + i]! /= Math.max(count, MIN_COUNT);
      squared += out[b * width + i]! ** 2;
    }
    const norm = Math.max(Math.sqrt(squared), MIN_NORM);
    for (let i = 0; i < width; i++) out[b * width + i]! /= norm;
  }
  return { dims: [batch, width], data: out };
}
