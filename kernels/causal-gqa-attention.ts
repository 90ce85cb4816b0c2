// Causal grouped-query attention over [past ; new] keys/values, the Optimum decoder contract:
// key j is visible to query i iff j <= past + i and attention_mask[b, j] == 1, and for a
// sliding-window layer also iff position(i) − window < position(j) (transformers' rule). Positions
// are counted over the attended keys (cumsum(attention_mask) − 1, Hugging Face's position_ids),
// not taken from indices: a left-padded batch's shorter rows have pads between past and new keys.
//
// GQA without copying K/V per query head: query head h uses kv head h / G (G = heads / kvHeads,
// Hugging Face's repeat_kv order), so Q [B, H, S, D] is viewed as [B, KVH, G·S, D] and multiplied
// against K [B, KVH, T, D] directly. The mask is built once per forward pass and shared by layers.

import type { GraphBuilder } from './onnx/graph-builder.js';
import type { RefTensor } from './reference/tensor.js';

/** Lowest finite value per float type: masked scores use it (not -inf) so fully masked rows stay finite. */
export const LOWEST = { float32: -3.4028234663852886e38, float16: -65504 } as const;

/**
 * Builds the visibility mask [B, 1, G·S, T] (bool) from `attentionMask` [B, T] int64 and the
 * number of new positions S (taken from `newTokens` [B, S]); with `slidingWindow`, a query sees
 * only the keys less than that many positions behind it (itself included). Build one per distinct
 * window and share it between the layers that use it.
 */
export function causalMask(g: GraphBuilder, attentionMask: string, newTokens: string, groups: number, slidingWindow?: number): string {
  const totalLength = g.op1('Gather', [g.op1('Shape', [attentionMask]), g.ints(1)], { axis: 0 }); // T
  const newLength = g.op1('Gather', [g.op1('Shape', [newTokens]), g.ints(1)], { axis: 0 }); // S
  const firstQuery = g.op1('Sub', [totalLength, newLength]); // past length P
  const keyPositions = g.op1('Range', [g.ints(0), totalLength, g.ints(1)]); // [T]
  const queryPositions = g.op1('Range', [firstQuery, totalLength, g.ints(1)]); // [S]: P .. T-1
  const causal = g.op1('LessOrEqual', [g.op1('Unsqueeze', [keyPositions, g.ints([0])]), g.op1('Unsqueeze', [queryPositions, g.ints([1])])]); // [S, T]
  const attended = g.op1('Cast', [g.op1('Unsqueeze', [attentionMask, g.ints([1, 2])])], { to: 9 }); // [B, 1, 1, T]
  let visible = g.op1('And', [causal, attended]); // [B, 1, S, T]
  if (slidingWindow !== undefined) {
    const positions = g.op1('Sub', [g.op1('CumSum', [attentionMask, g.ints(1)]), g.ints(1)]); // [B, T]: each attended key's position
    const queryAt = g.op1('Slice', [positions, g.op1('Unsqueeze', [firstQuery, g.ints([0])]), g.op1('Unsqueeze', [totalLength, g.ints([0])]), g.ints([1])]); // [B, S]
    const distance = g.op1('Sub', [g.op1('Unsqueeze', [queryAt, g.ints([2])]), g.op1('Unsqueeze', [positions, g.ints([1])])]); // [B, S, T]
    visible = g.op1('And', [visible, g.op1('Unsqueeze', [g.op1('Less', [distance, g.ints(slidingWindow)]), g.ints([1])])]);
  }
  return groups === 1 ? visible : g.op1('Tile', [visible, g.ints([1, 1, groups, 1])]); // rows ordered (g, s)
}

export interface AttentionInputs {
  /** [B, H, S, D], rotary already applied. */
  readonly query: string;
  /** [B, KVH, S, D] for the new positions, rotary applied to keys. */
  readonly key: string;
  readonly value: string;
  /** [B, KVH, P, D] (P may be 0). */
  readonly pastKey: string;
  readonly pastValue: string;
  /** From causalMask(): [B, 1, G·S, T]. */
  readonly mask: string;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
}

/** Returns the attention output [B, S, H·D] and the present K/V [B, KVH, P+S, D]. */
export function causalGqaAttention(g: GraphBuilder, a: AttentionInputs): { output: string; presentKey: string; presentValue: string } {
  const presentKey = g.op1('Concat', [a.pastKey, a.key], { axis: 2 });
  const presentValue = g.op1('Concat', [a.pastValue, a.value], { axis: 2 });
  const scaled = g.op1('Mul', [a.query, g.floats(1 / Math.sqrt(a.headDim))]);
  const grouped = g.op1('Reshape', [scaled, g.ints([0, a.numKvHeads, -1, a.headDim])]); // [B, KVH, G·S, D]
  const scores = g.op1('MatMul', [grouped, g.op1('Transpose', [presentKey], { perm: [0, 1, 3, 2] })]); // [B, KVH, G·S, T]
  const masked = g.op1('Where', [a.mask, scores, g.floats(LOWEST[g.floatType])]);
  const probabilities = g.op1('Softmax', [masked], { axis: -1 });
  const context = g.op1('MatMul', [probabilities, presentValue]); // [B, KVH, G·S, D]
  const perHead = g.op1('Reshape', [context, g.ints([0, a.numHeads, -1, a.headDim])]); // [B, H, S, D]
  const bySequence = g.op1('Transpose', [perHead], { perm: [0, 2, 1, 3] }); // [B, S, H, D]
  const output = g.op1('Reshape', [bySequence, g.ints([0, 0, a.numHeads * a.headDim])]);
  return { output, presentKey, presentValue };
}

/**
 * Float64 reference. query [B, H, S, D]; keys/values [B, KVH, T, D] already holding past and new
 * positions; mask [B, T] of 0/1; `slidingWindow` as causalMask's. Returns [B, S, H·D]. A query
 * that sees no key gets the mean of all values, which is what the graph's lowest-value fill gives
 * (a uniform softmax).
 */
export function causalGqaAttentionReference(query: RefTensor, keys: RefTensor, values: RefTensor, mask: readonly number[], slidingWindow = Infinity): RefTensor {
  const [batch, heads, seq, dim] = query.dims as [number, number, number, number];
  const [, kvHeads, total] = keys.dims as [number, number, number];
  const groups = heads / kvHeads;
  const past = total - seq;
  const out = new Float64Array(batch * seq * heads * dim);
  const scores = new Float64Array(total);
  for (let b = 0; b < batch; b++) {
    // Key j's position: how many attended keys precede it.
    const positions: number[] = [];
    for (let j = 0, seen = 0; j < total; j++) positions.push((seen += mask[b * total + j]!) - 1);
    for (let h = 0; h < heads; h++) {
      const kv = Math.floor(h / groups);
      for (let i = 0; i < seq; i++) {
        const q = ((b * heads + h) * seq + i) * dim;
        const visible = (j: number): boolean => j <= past + i && mask[b * total + j] === 1 && positions[past + i]! - positions[j]! < slidingWindow;
        let max = -Infinity;
        for (let j = 0; j < total; j++) {
          let dot = 0;
          const k = ((b * kvHeads + kv) * total + j) * dim;
          for (let d = 0; d < dim; d++) dot += query.data[q + d]! * keys.data[k + d]!;
          scores[j] = dot / Math.sqrt(dim);
          if (visible(j)) max = Math.max(max, scores[j]!);
        }
        const anyVisible = max > -Infinity;
        let sum = 0;
        for (let j = 0; j < total; j++) {
          scores[j] = anyVisible ? (visible(j) ? Math.exp(scores[j]! - max) : 0) : 1;
          sum += scores[j]!;
        }
        const o = ((b * seq + i) * heads + h) * dim;
        for (let j = 0; j < total; j++) {
          const v = ((b * kvHeads + kv) * total + j) * dim;
          const p = scores[j]! / sum;
          for (let d = 0; d < dim; d++) out[o + d]! += p * values.data[v + d]!;
        }
      }
    }
  }
  return { dims: [batch, seq, heads * dim], data: out };
}
