// Bidirectional multi-head self-attention (BERT): every query sees every key whose
// attention_mask is 1, so padded positions never influence real ones. Standard ONNX ops only,
// so any runtime (and any execution provider) runs it; ORT recognises the pattern itself.

import { linear, type LinearWeights, type Precision } from './linear.js';
import type { GraphBuilder } from './onnx/graph-builder.js';
import type { RefTensor } from './reference/tensor.js';
import { refLinear } from './gelu-mlp.js';

/** Lowest finite value per float type: masked scores use it (not -inf) so fully masked rows stay finite. */
const LOWEST = { float32: -3.4028234663852886e38, float16: -65504 } as const;

export interface EncoderAttentionWeights {
  readonly query: LinearWeights;
  readonly key: LinearWeights;
  readonly value: LinearWeights;
  readonly output: LinearWeights;
}

/** Hugging Face BERT's names, relative to `encoder.layer.{i}.attention`. */
export const BERT_ATTENTION_NAMES = { query: 'self.query', key: 'self.key', value: 'self.value', output: 'output.dense' } as const;

/** Key visibility [B, 1, 1, S] (bool) from attention_mask [B, S] int64; built once, shared by layers. */
export function paddingMask(g: GraphBuilder, attentionMask: string): string {
  return g.op1('Cast', [g.op1('Unsqueeze', [attentionMask, g.ints([1, 2])])], { to: 9 });
}

/** x [B, S, hidden] → output projection of the attention context [B, S, hidden]. */
export function encoderSelfAttention(
  g: GraphBuilder,
  x: string,
  mask: string,
  w: EncoderAttentionWeights,
  numHeads: number,
  precision: Precision,
  names: Record<keyof EncoderAttentionWeights, string> = BERT_ATTENTION_NAMES,
): string {
  const headDim = w.query.outFeatures / numHeads;
  const heads = (name: string, weights: LinearWeights, perm: number[]): string => {
    const projected = linear(g, x, name, weights, precision);
    return g.op1('Transpose', [g.op1('Reshape', [projected, g.ints([0, 0, numHeads, headDim])])], { perm });
  };
  const query = heads(names.query, w.query, [0, 2, 1, 3]); // [B, H, S, D]
  const keyT = heads(names.key, w.key, [0, 2, 3, 1]); // [B, H, D, S]
  const value = heads(names.value, w.value, [0, 2, 1, 3]); // [B, H, S, D]
  const scaled = g.op1('Mul', [query, g.floats(1 / Math.sqrt(headDim))]);
  const scores = g.op1('MatMul', [scaled, keyT]); // [B, H, S, S]
  const masked = g.op1('Where', [mask, scores, g.floats(LOWEST[g.floatType])]);
  const context = g.op1('MatMul', [g.op1('Softmax', [masked], { axis: -1 }), value]); // [B, H, S, D]
  const merged = g.op1('Reshape', [g.op1('Transpose', [context], { perm: [0, 2, 1, 3] }), g.ints([0, 0, numHeads * headDim])]);
  return linear(g, merged, names.output, w.output, precision);
}

/**
 * Float64 reference. x [B, S, hidden], mask [B·S] of 0/1. A query whose row has no visible key
 * gets the mean of all values, which is what the graph's lowest-value fill gives.
 */
export function encoderSelfAttentionReference(x: RefTensor, mask: ArrayLike<number>, w: EncoderAttentionWeights, numHeads: number): RefTensor {
  const [batch, seq] = x.dims as [number, number];
  const width = w.query.outFeatures;
  const dim = width / numHeads;
  const [q, k, v] = [refLinear(x, w.query), refLinear(x, w.key), refLinear(x, w.value)];
  const context = new Float64Array(batch * seq * width);
  const p = new Float64Array(seq);
  for (let b = 0; b < batch; b++) {
    const anyVisible = Array.from({ length: seq }, (_, j) => mask[b * seq + j]).some((m) => m === 1);
    for (let h = 0; h < numHeads; h++) {
      for (let i = 0; i < seq; i++) {
        const qi = (b * seq + i) * width + h * dim;
        let max = -Infinity;
        for (let j = 0; j < seq; j++) {
          const kj = (b * seq + j) * width + h * dim;
          let dot = 0;
          for (let d = 0; d < dim; d++) dot += q.data[qi + d]! * k.data[kj + d]!;
          p[j] = dot / Math.sqrt(dim);
          if (mask[b * seq + j] === 1) max = Math.max(max, p[j]!);
        }
        let sum = 0;
        for (let j = 0; j < seq; j++) {
          p[j] = anyVisible ? (mask[b * seq + j] === 1 ? Math.exp(p[j]! - max) : 0) : 1;
          sum += p[j]!;
        }
        for (let j = 0; j < seq; j++) {
          const vj = (b * seq + j) * width + h * dim;
          for (let d = 0; d < dim; d++) context[qi + d]! += (p[j]! / sum) * v.data[vj + d]!;
        }
      }
    }
  }
  return refLinear({ dims: [batch, seq, width], data: context }, w.output);
}
