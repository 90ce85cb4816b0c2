// One Qwen3-style decoder layer, shared by the Optimum graph (graph.ts, [B, S, ·] activations) and
// the paged graph (paged-graph.ts, flat [N, ·] tokens): they differ only in how heads are laid out
// and in the attention core, which the caller supplies.

import { fusedLinear, isWeightQuantized, linear, type WeightPrecision } from '../../kernels/linear.js';
import type { GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import { addRmsNorm, rmsNorm } from '../../kernels/rms-norm.js';
import type { RotaryTables } from '../../kernels/rotary-embedding.js';
import { swigluMlp } from '../../kernels/swiglu-mlp.js';
import type { DecoderConfig } from './config.js';
import type { DecoderLayerWeights } from './weights.js';

export interface LayerContext {
  readonly g: GraphBuilder;
  readonly c: DecoderConfig;
  readonly precision: WeightPrecision;
  /** Broadcastable against the arranged heads. */
  readonly rotary: RotaryTables;
}

/** How projections [.., heads·D] become the heads the attention core takes. */
export interface HeadLayout {
  /** [.., heads·D] → [.., heads, D]. */
  split(projected: string, count: number): string;
  /** [.., heads, D] → the core's layout (after the per-head norm, before RoPE). */
  arrange(perHead: string): string;
  /** RoPE on arranged heads, positions as `rotary` was built for this layout. */
  rotate(arranged: string, rotary: RotaryTables): string;
}

/**
 * The residual stream between layers: a value, or a sum not added yet, which the next RMSNorm adds
 * as it normalizes (addRmsNorm: one node for the residual Add and the norm).
 */
export type ResidualStream = string | { readonly residual: string; readonly update: string };

/** `stream`'s RMSNorm, and the stream as one value (the sum, where it was pending). */
function normalizeStream(g: GraphBuilder, stream: ResidualStream, weight: string, epsilon: number): { stream: string; normed: string } {
  if (typeof stream === 'string') return { stream, normed: rmsNorm(g, stream, weight, epsilon) };
  const { sum, normed } = addRmsNorm(g, stream.residual, stream.update, weight, epsilon);
  return { stream: sum, normed };
}

/** q, k (RoPE applied) and v in the layout's arrangement → the attention output [.., H·D] (before o_proj), plus whatever else the core returns. */
export type AttentionCore<T extends { output: string }> = (q: string, k: string, v: string) => T;

export function decoderLayer<T extends { output: string }>(
  context: LayerContext,
  x: ResidualStream,
  w: DecoderLayerWeights,
  layout: HeadLayout,
  core: AttentionCore<T>,
): T & { hidden: ResidualStream } {
  const { query, key, value, residual } = attentionInputs(context, x, w, layout);
  const result = context.g.scope('self_attn', () => core(query, key, value));
  return { ...result, hidden: layerOutput(context, residual, result.output, w) };
}

/**
 * The layer's half before its attention core: the input norm, q/k/v projections, Qwen3's per-head
 * norms, RoPE. The segmented paged decoder (paged-segments.ts) ends a segment here.
 */
export function attentionInputs(
  { g, c, precision, rotary }: LayerContext,
  x: ResidualStream,
  w: DecoderLayerWeights,
  layout: HeadLayout,
): { query: string; key: string; value: string; residual: string } {
  const { stream: residual, normed } = g.scope('input_layernorm', () => normalizeStream(g, x, g.weight('weight', [c.hiddenSize], w.inputNorm), c.rmsNormEps));
  return g.scope('self_attn', () => {
    // Qwen3's per-head RMSNorm on q and k before RoPE (LLaMA, Qwen2 and Mistral have none: their
    // layers carry no qNorm / kNorm).
    const heads = (projected: string, count: number, norm?: { name: string; weight?: Float32Array | undefined }): string => {
      let perHead = layout.split(projected, count);
      const weight = norm?.weight;
      if (norm && weight) perHead = g.scope(norm.name, () => rmsNorm(g, perHead, g.weight('weight', [c.headDim], weight), c.rmsNormEps));
      return layout.arrange(perHead);
    };
    // One MatMul for q, k and v only where weights are quantized: MatMulNBits quantizes activations
    // per row, so a row's result never depends on its batch neighbours. ORT's float16 MatMul on CPU
    // accumulates in an order that follows the shapes, and the fused projection flipped a greedy
    // near-tie between a padded batch and a lone request (engine-core test, fp16 variant).
    const [qProjected, kProjected, vProjected] = isWeightQuantized(precision)
      ? (fusedLinear(g, normed, 'qkv_proj', [w.q, w.k, w.v], precision) as [string, string, string])
      : [linear(g, normed, 'q_proj', w.q, precision), linear(g, normed, 'k_proj', w.k, precision), linear(g, normed, 'v_proj', w.v, precision)];
    const q = heads(qProjected, c.numHeads, { name: 'q_norm', weight: w.qNorm });
    const k = heads(kProjected, c.numKvHeads, { name: 'k_norm', weight: w.kNorm });
    const v = heads(vProjected, c.numKvHeads);
    return { query: layout.rotate(q, rotary), key: layout.rotate(k, rotary), value: v, residual };
  });
}

/**
 * The layer's half after its attention core ([.., H·D]): o_proj, the residual add, the MLP. Returns
 * the next layer's input with the MLP's residual add left to the next norm.
 */
export function layerOutput({ g, c, precision }: Pick<LayerContext, 'g' | 'c' | 'precision'>, x: string, attentionCore: string, w: DecoderLayerWeights): ResidualStream {
  const attention = g.scope('self_attn', () => linear(g, attentionCore, 'o_proj', w.o, precision));
  const { stream: afterAttention, normed: mlpInput } = g.scope('post_attention_layernorm', () =>
    normalizeStream(g, { residual: x, update: attention }, g.weight('weight', [c.hiddenSize], w.postAttentionNorm), c.rmsNormEps),
  );
  const mlp = g.scope('mlp', () => swigluMlp(g, mlpInput, { gate: w.gate, up: w.up, down: w.down }, precision));
  return { residual: afterAttention, update: mlp };
}

/** The final norm; logits through the tied lm_head come after the caller picks its rows. */
export function finalNorm(g: GraphBuilder, c: DecoderConfig, hidden: ResidualStream, weight: Float32Array): string {
  return g.scope('model.norm', () => normalizeStream(g, hidden, g.weight('weight', [c.hiddenSize], weight), c.rmsNormEps).normed);
}
