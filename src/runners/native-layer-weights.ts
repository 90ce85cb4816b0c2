// The weights the native layer ops compute with (native-layers.ts), read from the segment files
// themselves: each segment's float32 initializers by the names decoder-layer.ts gives them, its
// projections packed once into the kernel's panels. A segment that lacks one (quantized or
// float16 weights, another family's names) is reported as what is missing, and stays in ONNX Runtime.

import type { SegmentHeadWiring, SegmentLayerWiring } from '../contracts/paged-segments.js';
import { readFloatInitializers } from '../runtime/onnx-initializers.js';
import type { DecoderLayerOps, PackedLinear } from '../runtime/paged-attention-kernel.js';

export interface Linear {
  readonly packed: PackedLinear;
  readonly bias: Float32Array | undefined;
}

/** A layer's output half: o_proj, the residual add and norm, the gated MLP. */
export interface OutputHalf {
  readonly wiring: SegmentLayerWiring;
  readonly o: Linear;
  readonly postAttentionNorm: Float32Array;
  readonly gate: Linear;
  readonly up: Linear;
  readonly down: Linear;
}

/** The last segment's weights: the last layer's output half, the final norm, the lm_head. */
export interface HeadSegment extends OutputHalf {
  /** True where the table is the embedding's (tied): segment 0 looks its rows up in lmHead. */
  readonly tied: boolean;
  readonly finalNorm: Float32Array;
  readonly lmHead: PackedLinear;
  readonly logitsMultiplier: number;
  /** The unused-id bias's nonzero entries (ids past the tokenizer): the rest of it is zero, so only these are added. */
  readonly biasIds: Int32Array;
  readonly biasValues: Float32Array;
}

/** A layer's input half: the input norm, q/k/v, the per-head q/k norms, RoPE. */
export interface InputHalf {
  readonly wiring: SegmentLayerWiring;
  readonly inputNorm: Float32Array;
  readonly q: Linear;
  readonly k: Linear;
  readonly v: Linear;
  readonly qNorm: Float32Array | undefined;
  readonly kNorm: Float32Array | undefined;
  readonly inverseFrequencies: Float32Array | undefined;
}

/** Segment i's weights: layer i − 1's output half, layer i's input half. */
export type InnerSegment = OutputHalf & InputHalf;

/** Segment 0's weights: the embedding (a table packed transposed, the lm_head's own where tied) and layer 0's input half. */
export interface FirstSegment extends InputHalf {
  readonly table: PackedLinear;
  readonly multiplier: number;
}

/** The initializer names of layer `layer`'s output half (decoder-layer.ts's scopes). */
function outputHalfNames(layer: number) {
  const scope = `model.layers.${layer}`;
  return {
    o: linearNames(`${scope}.self_attn`, 'o_proj'),
    postAttentionNorm: `${scope}.post_attention_layernorm.weight`,
    gate: linearNames(`${scope}.mlp`, 'gate_proj'),
    up: linearNames(`${scope}.mlp`, 'up_proj'),
    down: linearNames(`${scope}.mlp`, 'down_proj'),
  };
}

function linearNames(scope: string, name: string) {
  return { weight: `${scope}.${name}.weight`, bias: `${scope}.${name}.bias` };
}

/** The initializer names of layer `layer`'s input half. */
function inputHalfNames(layer: number) {
  const scope = `model.layers.${layer}`;
  return {
    inputNorm: `${scope}.input_layernorm.weight`,
    q: linearNames(`${scope}.self_attn`, 'q_proj'),
    k: linearNames(`${scope}.self_attn`, 'k_proj'),
    v: linearNames(`${scope}.self_attn`, 'v_proj'),
    qNorm: `${scope}.self_attn.q_norm.weight`,
    kNorm: `${scope}.self_attn.k_norm.weight`,
  };
}

type Names = Record<string, string | { weight: string; bias: string }>;

/** A segment file's float32 initializers named in `names`, with packing of its linears (the bytes packed counted). */
function segmentWeights(ops: DecoderLayerOps, path: string, names: Names, extra: readonly string[] = []) {
  const wanted = new Set([...Object.values(names).flatMap((name) => (typeof name === 'string' ? [name] : [name.weight, name.bias])), ...extra]);
  const found = readFloatInitializers(path, wanted);
  const weights = {
    bytes: 0,
    found,
    vector: (name: string) => found.get(name)?.data,
    linear: ({ weight, bias }: { weight: string; bias: string }): Linear | undefined => {
      const w = found.get(weight);
      if (w?.dims.length !== 2) return undefined;
      const [inFeatures, outFeatures] = w.dims as [number, number];
      weights.bytes += packedSize(inFeatures, outFeatures);
      return { packed: ops.packLinear(w.data, inFeatures, outFeatures), bias: found.get(bias)?.data };
    },
  };
  return weights;
}

/** Bytes a packed [in, out] weight takes (decoder-ops.h's packed_bytes: out rounded up to whole 64-column panels). */
const packedSize = (inFeatures: number, outFeatures: number): number => 4 * inFeatures * Math.ceil(outFeatures / 64) * 64;

type Loaded<T> = { segment: T; bytes: number } | { missing: string };

function loadOutputHalf(weights: ReturnType<typeof segmentWeights>, layer: number, wiring: SegmentLayerWiring): OutputHalf | { missing: string } {
  const names = outputHalfNames(layer);
  const parts = { o: weights.linear(names.o), gate: weights.linear(names.gate), up: weights.linear(names.up), down: weights.linear(names.down) };
  for (const [part, value] of Object.entries(parts)) if (!value) return { missing: `${part}_proj weight` };
  const postAttentionNorm = weights.vector(names.postAttentionNorm);
  if (!postAttentionNorm) return { missing: 'post_attention_layernorm weight' };
  return { wiring, ...(parts as Record<keyof typeof parts, Linear>), postAttentionNorm };
}

function loadInputHalf(weights: ReturnType<typeof segmentWeights>, layer: number, wiring: SegmentLayerWiring): InputHalf | { missing: string } {
  const names = inputHalfNames(layer);
  const parts = { q: weights.linear(names.q), k: weights.linear(names.k), v: weights.linear(names.v) };
  for (const [part, value] of Object.entries(parts)) if (!value) return { missing: `${part}_proj weight` };
  const inputNorm = weights.vector(names.inputNorm);
  if (!inputNorm) return { missing: 'input_layernorm weight' };
  // decoder-layer.ts applies a per-head q/k norm only where the checkpoint has its weights.
  const perHead = wiring.qkNorm === 'head';
  const inverseFrequencies = wiring.rope ? Float32Array.from(wiring.rope.inverseFrequencies) : undefined;
  const norms = { qNorm: perHead ? weights.vector(names.qNorm) : undefined, kNorm: perHead ? weights.vector(names.kNorm) : undefined };
  return { wiring, ...(parts as Record<keyof typeof parts, Linear>), inputNorm, inverseFrequencies, ...norms };
}

export function loadInnerSegment(ops: DecoderLayerOps, path: string, segment: number, wiring: SegmentLayerWiring): Loaded<InnerSegment> {
  const weights = segmentWeights(ops, path, { ...outputHalfNames(segment - 1), ...inputHalfNames(segment) });
  const [output, input] = [loadOutputHalf(weights, segment - 1, wiring), loadInputHalf(weights, segment, wiring)];
  if ('missing' in output) return output;
  if ('missing' in input) return input;
  return { segment: { ...output, ...input }, bytes: weights.bytes };
}

/** Segment 0; `tiedTable` the lm_head packed from the same table where the embedding is tied (none read then). */
export function loadFirstSegment(ops: DecoderLayerOps, path: string, wiring: SegmentLayerWiring, multiplier: number, tiedTable: PackedLinear | undefined): Loaded<FirstSegment> {
  const tableName = 'model.embed_tokens.weight';
  const weights = segmentWeights(ops, path, inputHalfNames(0), tiedTable ? [] : [tableName]);
  const input = loadInputHalf(weights, 0, wiring);
  if ('missing' in input) return input;
  if (tiedTable) return { segment: { ...input, table: tiedTable, multiplier }, bytes: weights.bytes };
  const table = weights.found.get(tableName);
  if (table?.dims.length !== 2) return { missing: `${tableName} table` };
  const [vocab, hidden] = table.dims as [number, number];
  return { segment: { ...input, table: ops.packLinear(table.data, hidden, vocab, true), multiplier }, bytes: weights.bytes + packedSize(hidden, vocab) };
}

/** The last segment (`layer` = the last layer), or what is missing. */
export function loadHeadSegment(ops: DecoderLayerOps, path: string, layer: number, wiring: SegmentHeadWiring): Loaded<HeadSegment> {
  const [finalNormName, tableName, biasName] = ['model.norm.weight', `${wiring.table}.weight`, 'lm_head.unused_id_bias'];
  const weights = segmentWeights(ops, path, outputHalfNames(layer), [finalNormName, tableName, biasName]);
  const half = loadOutputHalf(weights, layer, wiring.layer);
  if ('missing' in half) return half;
  const [finalNorm, table, bias] = [weights.vector(finalNormName), weights.found.get(tableName), weights.vector(biasName)];
  if (!finalNorm) return { missing: 'final norm weight' };
  if (table?.dims.length !== 2) return { missing: `${tableName} table` };
  const [vocab, hidden] = table.dims as [number, number];
  if (bias && bias.length !== vocab) return { missing: `${biasName} of ${vocab} entries` };
  // The Gemm's B with transB: the [vocab, hidden] table is the [hidden, vocab] weight's transpose.
  const lmHead = ops.packLinear(table.data, hidden, vocab, true);
  const biasIds = Int32Array.from((bias ?? []).keys()).filter((id) => bias![id] !== 0);
  const segment = {
    ...half,
    tied: wiring.table === 'model.embed_tokens',
    finalNorm,
    lmHead,
    logitsMultiplier: wiring.logitsMultiplier,
    biasIds,
    biasValues: Float32Array.from(biasIds, (id) => bias![id]!),
  };
  return { segment, bytes: weights.bytes + packedSize(hidden, vocab) };
}
