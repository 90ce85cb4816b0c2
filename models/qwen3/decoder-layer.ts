// One decoder layer, shared by the Optimum graph (graph.ts, [B, S, ·] activations) and the paged
// graphs (paged-graph.ts, paged-segments.ts: flat [N, ·] tokens): they differ only in how heads
// are laid out and in the attention core, which the caller supplies. The family's wiring
// (config.variant: where the norms sit, q/k norms, the MLP's activation, the attention scale) and
// the layer's RoPE (config.layerSpecs) are read here, so every graph follows them alike.

import { fusedLinear, isWeightQuantized, linear, type WeightPrecision } from '../../kernels/linear.js';
import type { GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import { addRmsNorm, rmsNorm } from '../../kernels/rms-norm.js';
import { inverseFrequencies, type RotaryTables } from '../../kernels/rotary-embedding.js';
import { gatedMlp } from '../../kernels/swiglu-mlp.js';
import { DEFAULT_DECODER_VARIANT, type DecoderConfig, type DecoderVariant, type LayerRope } from './config.js';
import type { DecoderLayerWeights } from './weights.js';

export interface LayerContext {
  readonly g: GraphBuilder;
  readonly c: DecoderConfig;
  readonly precision: WeightPrecision;
  /** Broadcastable against the arranged heads; undefined where the layer applies no RoPE. */
  readonly rotary: RotaryTables | undefined;
}

export const variantOf = (c: DecoderConfig): DecoderVariant => c.variant ?? DEFAULT_DECODER_VARIANT;

/** Layer `layer`'s RoPE: its spec's, or the config's single RoPE where it declares no per-layer specs. */
export function layerRope(c: DecoderConfig, layer: number): LayerRope | undefined {
  if (c.layerSpecs) return c.layerSpecs[layer]?.rope;
  return { inverseFrequencies: c.ropeInverseFrequencies ?? inverseFrequencies(c.headDim, c.ropeTheta), attentionFactor: 1 };
}

/** Each layer's RotaryTables, built by `build` once per distinct RoPE (Gemma 3's local and global layers share two sets). */
export function layerRotaries(c: DecoderConfig, build: (rope: LayerRope) => RotaryTables): (layer: number) => RotaryTables | undefined {
  const built = new Map<string, RotaryTables>();
  return (layer) => {
    const rope = layerRope(c, layer);
    if (!rope) return undefined;
    const key = JSON.stringify(rope);
    if (!built.has(key)) built.set(key, build(rope));
    return built.get(key);
  };
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

/** The stream as one value: the residual sum, where it was pending. */
function materialize(g: GraphBuilder, stream: ResidualStream): string {
  return typeof stream === 'string' ? stream : g.op1('Add', [stream.residual, stream.update]);
}

const unnormed = (stream: string): { stream: string; normed: string } => ({ stream, normed: stream });

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
  const variant = variantOf(c);
  // OLMo 2 norms only each block's output: the attention reads the stream itself. Read once: a
  // converted checkpoint's weights are getters that read the tensor each time.
  const inputNorm = variant.norms === 'post' ? undefined : w.inputNorm;
  const { stream: residual, normed } = inputNorm ? g.scope('input_layernorm', () => normalizeStream(g, x, g.weight('weight', [c.hiddenSize], inputNorm), c.rmsNormEps)) : unnormed(materialize(g, x));
  return g.scope('self_attn', () => {
    // q/k RMSNorm before RoPE: per head over head_dim (Qwen3, Gemma 3), or over the whole
    // projection before it is split into heads (OLMo 2). LLaMA, Qwen2 and Mistral have none.
    const heads = (projected: string, count: number, norm?: { name: string; weight?: Float32Array | undefined }): string => {
      const weight = norm?.weight;
      const normed = (x: string, width: number) => g.scope(norm!.name, () => rmsNorm(g, x, g.weight('weight', [width], weight!), c.rmsNormEps));
      if (weight && variant.qkNorm === 'projection') return layout.arrange(layout.split(normed(projected, count * c.headDim), count));
      const perHead = layout.split(projected, count);
      return layout.arrange(weight && variant.qkNorm !== 'none' ? normed(perHead, c.headDim) : perHead);
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
    const rotate = (x: string): string => (rotary ? layout.rotate(x, rotary) : x);
    return { query: scaleQuery(g, c, rotate(q)), key: rotate(k), value: v, residual };
  });
}

/**
 * The attention cores scale q·k by 1/√head_dim; a family with its own scale (Gemma's
 * query_pre_attn_scalar, Granite's attention_multiplier) has q multiplied by the ratio, so every
 * core (the native kernel included) stays one code path.
 */
function scaleQuery(g: GraphBuilder, c: DecoderConfig, query: string): string {
  const scale = variantOf(c).attentionScale;
  if (scale === undefined) return query;
  const ratio = scale * Math.sqrt(c.headDim);
  return Math.abs(ratio - 1) < 1e-12 ? query : g.op1('Mul', [query, g.floats(ratio)]);
}

/**
 * The layer's half after its attention core ([.., H·D]): o_proj, the residual add, the MLP. Returns
 * the next layer's input with the MLP's residual add left to the next norm.
 */
export function layerOutput({ g, c, precision }: Pick<LayerContext, 'g' | 'c' | 'precision'>, x: string, attentionCore: string, w: DecoderLayerWeights): ResidualStream {
  const variant = variantOf(c);
  const attention = g.scope('self_attn', () => linear(g, attentionCore, 'o_proj', w.o, precision));
  const norm = (name: string, value: string, weight: Float32Array | undefined): string =>
    g.scope(name, () => rmsNorm(g, value, g.weight('weight', [c.hiddenSize], required(weight, name)), c.rmsNormEps));
  const mlp = (input: string): string => g.scope('mlp', () => gatedMlp(g, input, { gate: w.gate, up: w.up, down: w.down }, precision, variant.activation));
  if (variant.norms === 'pre') {
    const { stream: afterAttention, normed: mlpInput } = g.scope('post_attention_layernorm', () =>
      normalizeStream(g, { residual: x, update: attention }, g.weight('weight', [c.hiddenSize], w.postAttentionNorm), c.rmsNormEps),
    );
    return { residual: afterAttention, update: mlp(mlpInput) };
  }
  // Gemma 3 and OLMo 2 norm each block's output before its residual add.
  const attended = { residual: x, update: norm('post_attention_layernorm', attention, w.postAttentionNorm) };
  const { stream: afterAttention, normed: mlpInput } =
    variant.norms === 'sandwich'
      ? g.scope('pre_feedforward_layernorm', () => normalizeStream(g, attended, g.weight('weight', [c.hiddenSize], required(w.preFeedforwardNorm, 'pre_feedforward_layernorm')), c.rmsNormEps))
      : unnormed(materialize(g, attended));
  return { residual: afterAttention, update: norm('post_feedforward_layernorm', mlp(mlpInput), w.postFeedforwardNorm) };
}

function required(weight: Float32Array | undefined, name: string): Float32Array {
  if (!weight) throw new Error(`the layer's ${name} weight is missing`);
  return weight;
}

/** The final norm; logits through the tied lm_head come after the caller picks its rows. */
export function finalNorm(g: GraphBuilder, c: DecoderConfig, hidden: ResidualStream, weight: Float32Array): string {
  return g.scope('model.norm', () => normalizeStream(g, hidden, g.weight('weight', [c.hiddenSize], weight), c.rmsNormEps).normed);
}
