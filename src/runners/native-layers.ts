// The segmented decoder's inner segments (1 .. numLayers − 1: layer i − 1's o_proj, residual and
// MLP, then layer i's input norm, q/k/v, q/k norms and RoPE) and its last segment (the last
// layer's o_proj and MLP, the final norm, the lm_head of the sampled rows) computed with the
// native kernel's layer ops (src/runtime/native/decoder-ops.h) on steps of a few rows, in place of
// their ONNX Runtime sessions. At a few rows a step is bound by reading the weights once, and
// ORT's fp32 MatMul computes each extra row without overlapping it with that read: on the copier
// a 5-row verify step's ORT segments took 1.3-1.4× a 1-row decode step's; the packed linears read
// each weight panel once for all rows (bench/results, "native layers"). Steps of more rows
// (prefill, many streams) stay in ORT, whose blocked GEMM is the faster there.
//
// The same arithmetic as the segment's graph (models/qwen3/decoder-layer.ts), read from the
// segment itself: its wiring from the conveyor.decoder_layer / conveyor.decoder_head metadata,
// its float32 weights from its initializers, packed once at load (a second copy of those weights:
// ORT keeps its own for the larger steps). Families whose wiring the ops do not cover (norms after
// the blocks, a q/k norm over the whole projection), quantized or float16 weights, and segments
// written before the metadata existed keep every step in ORT, with the reason in the runner's
// note; a final logit soft cap keeps only the last segment there.

import { DECODER_HEAD_PROPERTY, DECODER_LAYER_PROPERTY, type SegmentHeadWiring, type SegmentLayerWiring } from '../contracts/paged-segments.js';
import { readFloatInitializers } from '../runtime/onnx-initializers.js';
import type { DecoderLayerOps, PackedLinear } from '../runtime/paged-attention-kernel.js';

/**
 * Rows up to which a step's inner segments run natively: the packed linear keeps 8 rows'
 * accumulators in registers, so up to 8 rows read the weights once; past that it reads them
 * again per 8 rows, where ORT's blocked GEMM reuses them from cache.
 */
export const NATIVE_LAYER_MAX_ROWS = 8;

interface Linear {
  readonly packed: PackedLinear;
  readonly bias: Float32Array | undefined;
}

/** A layer's output half: o_proj, the residual add and norm, the gated MLP. */
interface OutputHalf {
  readonly wiring: SegmentLayerWiring;
  readonly o: Linear;
  readonly postAttentionNorm: Float32Array;
  readonly gate: Linear;
  readonly up: Linear;
  readonly down: Linear;
}

/** The last segment's weights: the last layer's output half, the final norm, the lm_head. */
interface HeadSegment extends OutputHalf {
  readonly finalNorm: Float32Array;
  readonly lmHead: PackedLinear;
  readonly logitsMultiplier: number;
  /** The unused-id bias's nonzero entries (ids past the tokenizer): the rest of it is zero, so only these are added. */
  readonly biasIds: Int32Array;
  readonly biasValues: Float32Array;
}

/** Segment i's weights: layer i − 1's output half, layer i's input half. */
interface InnerSegment extends OutputHalf {
  readonly inputNorm: Float32Array;
  readonly q: Linear;
  readonly k: Linear;
  readonly v: Linear;
  readonly qNorm: Float32Array | undefined;
  readonly kNorm: Float32Array | undefined;
  readonly inverseFrequencies: Float32Array | undefined;
}

export interface LayerShape {
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
}

/** What an inner segment returns, as its session would: the next layer's input (the residual), its q (RoPE and scale applied), k, v. */
export interface InnerSegmentOutput {
  readonly hidden: Float32Array;
  readonly query: Float32Array;
  readonly key: Float32Array;
  readonly value: Float32Array;
}

export type NativeLayersAvailability = { readonly layers: NativeLayers } | { readonly unavailable: string };

/** Why `wiring` cannot run natively, or null. */
function unsupported(wiring: SegmentLayerWiring): string | null {
  if (wiring.norms !== 'pre') return `norms '${wiring.norms}' (only norms before the blocks)`;
  if (wiring.qkNorm === 'projection') return 'a q/k norm over the whole projection';
  if (wiring.activation !== 'silu' && wiring.activation !== 'gelu_tanh') return `activation '${wiring.activation}'`;
  return null;
}

/** Why the last segment cannot run natively, or null. */
function unsupportedHead(wiring: SegmentHeadWiring): string | null {
  if (wiring.finalLogitSoftcap !== null) return 'a final logit soft cap';
  return unsupported(wiring.layer);
}

export class NativeLayers {
  private constructor(
    private readonly ops: DecoderLayerOps,
    private readonly shape: LayerShape & { hiddenSize: number; intermediateSize: number },
    /** Index i − 1 holds segment i. */
    private readonly inner: readonly InnerSegment[],
    /** The last segment, where it can run natively. */
    private readonly last: HeadSegment | undefined,
    private readonly threads: number,
    /** Bytes of the packed weights. */
    readonly packedBytes: number,
    /** Why the last segment stays in ONNX Runtime; undefined where it runs natively. */
    readonly headUnavailable: string | undefined,
  ) {}

  /** Each row count's buffers, by rows (at most NATIVE_LAYER_MAX_ROWS entries). */
  private readonly buffers = new Map<number, StepBuffers>();

  /**
   * Packs segments 1 .. n − 2 of `segmentPaths` (all n segments' files, in order; `properties` their
   * metadata_props), and segment n − 1 where its wiring allows. Unavailable, with the reason, where
   * any inner segment cannot run natively; the last one alone stays in ONNX Runtime where it cannot.
   */
  static open(
    ops: DecoderLayerOps,
    segmentPaths: readonly string[],
    properties: readonly (Readonly<Record<string, string>> | undefined)[],
    shape: LayerShape,
    threads: number,
  ): NativeLayersAvailability {
    const inner: InnerSegment[] = [];
    let packedBytes = 0;
    for (let segment = 1; segment < segmentPaths.length - 1; segment++) {
      const text = properties[segment]?.[DECODER_LAYER_PROPERTY];
      if (text === undefined) return { unavailable: `segment ${segment} has no ${DECODER_LAYER_PROPERTY} metadata (converted before it existed)` };
      const wiring = JSON.parse(text) as SegmentLayerWiring;
      const reason = unsupported(wiring);
      if (reason) return { unavailable: `segment ${segment}: ${reason}` };
      const loaded = loadInnerSegment(ops, segmentPaths[segment]!, segment, wiring);
      if ('missing' in loaded) return { unavailable: `segment ${segment} has no float32 ${loaded.missing} (quantized or float16 weights run in ONNX Runtime)` };
      inner.push(loaded.segment);
      packedBytes += loaded.bytes;
    }
    if (inner.length === 0) return { unavailable: 'the decoder has no inner segments' };
    const head = NativeLayers.openHead(ops, segmentPaths, properties);
    if ('segment' in head) packedBytes += head.bytes;
    const first = inner[0]!;
    const layerShape = { ...shape, hiddenSize: first.o.packed.outFeatures, intermediateSize: first.gate.packed.outFeatures };
    return { layers: new NativeLayers(ops, layerShape, inner, 'segment' in head ? head.segment : undefined, threads, packedBytes, 'unavailable' in head ? head.unavailable : undefined) };
  }

  private static openHead(
    ops: DecoderLayerOps,
    segmentPaths: readonly string[],
    properties: readonly (Readonly<Record<string, string>> | undefined)[],
  ): { segment: HeadSegment; bytes: number } | { unavailable: string } {
    const last = segmentPaths.length - 1;
    const text = properties[last]?.[DECODER_HEAD_PROPERTY];
    if (text === undefined) return { unavailable: `no ${DECODER_HEAD_PROPERTY} metadata (converted before it existed)` };
    const wiring = JSON.parse(text) as SegmentHeadWiring;
    const reason = unsupportedHead(wiring);
    if (reason) return { unavailable: reason };
    const loaded = loadHeadSegment(ops, segmentPaths[last]!, last - 1, wiring);
    return 'missing' in loaded ? { unavailable: `no float32 ${loaded.missing}` } : loaded;
  }

  /** True where the last segment runs natively too (head()). */
  get hasHead(): boolean {
    return this.last !== undefined;
  }

  /**
   * Segment `segment`'s outputs for `rows` tokens (residual [rows, hidden], attention [rows, heads·D],
   * positions [rows]). The outputs are this object's buffers for `rows`, overwritten by the next
   * segment but one: the runner uses them before then (the kernel copies K/V into the pool, and
   * the next segment reads the residual).
   */
  run(segment: number, residual: Float32Array, attention: Float32Array, positions: BigInt64Array, rows: number): InnerSegmentOutput {
    const s = this.inner[segment - 1];
    if (!s) throw new RangeError(`segment ${segment} is not an inner segment (1 .. ${this.inner.length})`);
    const { hiddenSize, numHeads, numKvHeads, headDim } = this.shape;
    const eps = s.wiring.rmsNormEps;
    const b = this.buffersFor(rows);
    const out = b.outputs[segment % 2]!;
    this.outputHalf(s, residual, attention, rows, b);
    // Layer i's input half: the residual add and input norm, q/k/v, q/k norms per head, RoPE.
    this.ops.addRmsNorm(b.afterAttention, b.attended, rows, hiddenSize, s.inputNorm, eps, out.hidden, b.mlpInput);
    this.heads(s.q, b.mlpInput, rows, numHeads, s.qNorm, eps, b.query, out.query);
    this.heads(s.k, b.mlpInput, rows, numKvHeads, s.kNorm, eps, b.key, out.key);
    this.linear(s.v, b.mlpInput, rows, out.value);
    if (s.inverseFrequencies) {
      const factor = s.wiring.rope!.attentionFactor;
      this.ops.rope(out.query, rows, numHeads, headDim, positions, s.inverseFrequencies, factor);
      this.ops.rope(out.key, rows, numKvHeads, headDim, positions, s.inverseFrequencies, factor);
    }
    if (s.wiring.queryScale !== 1) for (let i = 0; i < out.query.length; i++) out.query[i]! *= s.wiring.queryScale;
    return out;
  }

  /**
   * The last segment: the logits [sampled.length, vocab] of the rows `sampled` picks (flat
   * positions, as logits_indices) out of `rows` tokens, multiplied and biased as the segment's
   * lm_head does. A fresh array: the sampler may overwrite its rows.
   */
  head(residual: Float32Array, attention: Float32Array, rows: number, sampled: BigInt64Array): Float32Array {
    const s = this.last;
    if (!s) throw new Error(`the last segment runs in ONNX Runtime here: ${this.headUnavailable}`);
    const { hiddenSize } = this.shape;
    const b = this.buffersFor(rows);
    this.outputHalf(s, residual, attention, rows, b);
    this.ops.addRmsNorm(b.afterAttention, b.attended, rows, hiddenSize, s.finalNorm, s.wiring.rmsNormEps, b.outputs[0].hidden, b.mlpInput);
    // Only the sampled rows go through the lm_head.
    sampled.forEach((position, i) => b.picked.set(b.mlpInput.subarray(Number(position) * hiddenSize, (Number(position) + 1) * hiddenSize), i * hiddenSize));
    const vocab = s.lmHead.outFeatures;
    const logits = new Float32Array(sampled.length * vocab);
    this.ops.linear(s.lmHead, b.picked, sampled.length, logits, this.threads);
    if (s.logitsMultiplier !== 1) for (let i = 0; i < logits.length; i++) logits[i]! *= s.logitsMultiplier;
    for (let row = 0; row < sampled.length; row++) s.biasIds.forEach((id, j) => (logits[row * vocab + id]! += s.biasValues[j]!));
    return logits;
  }

  /** A layer's output half into `b`: afterAttention (the residual after o_proj) and attended (the MLP's output). */
  private outputHalf(s: OutputHalf, residual: Float32Array, attention: Float32Array, rows: number, b: StepBuffers): void {
    this.linear(s.o, attention, rows, b.attended);
    this.ops.addRmsNorm(residual, b.attended, rows, this.shape.hiddenSize, s.postAttentionNorm, s.wiring.rmsNormEps, b.afterAttention, b.mlpInput);
    this.linear(s.gate, b.mlpInput, rows, b.gate);
    this.linear(s.up, b.mlpInput, rows, b.up);
    this.ops.gatedActivation(b.gate, b.up, rows * this.shape.intermediateSize, s.wiring.activation);
    this.linear(s.down, b.gate, rows, b.attended);
  }

  /**
   * The buffers of a step of `rows`, made once per row count: fresh arrays on every call were
   * about 2 MB a five-row step, and the garbage collections they set off (a full one every few
   * verify steps) fell inside the steps. Two sets of outputs, alternating by segment, so a
   * segment never writes the residual it reads.
   */
  private buffersFor(rows: number): StepBuffers {
    const kept = this.buffers.get(rows);
    if (kept) return kept;
    const { hiddenSize, intermediateSize, numHeads, numKvHeads, headDim } = this.shape;
    const rowsOf = (width: number) => new Float32Array(rows * width);
    const output = (): InnerSegmentOutput => ({ hidden: rowsOf(hiddenSize), query: rowsOf(numHeads * headDim), key: rowsOf(numKvHeads * headDim), value: rowsOf(numKvHeads * headDim) });
    const made: StepBuffers = {
      attended: rowsOf(hiddenSize),
      afterAttention: rowsOf(hiddenSize),
      mlpInput: rowsOf(hiddenSize),
      gate: rowsOf(intermediateSize),
      up: rowsOf(intermediateSize),
      query: rowsOf(numHeads * headDim),
      key: rowsOf(numKvHeads * headDim),
      picked: rowsOf(hiddenSize),
      outputs: [output(), output()],
    };
    this.buffers.set(rows, made);
    return made;
  }

  private linear(w: Linear, x: Float32Array, rows: number, y: Float32Array): void {
    this.ops.linear(w.packed, x, rows, y, this.threads);
    if (w.bias) for (let i = 0; i < y.length; i++) y[i]! += w.bias[i % w.bias.length]!;
  }

  /** A q or k projection into `out`, normed per head where the layer has the norm (`projected` holds the projection then). */
  private heads(w: Linear, x: Float32Array, rows: number, count: number, norm: Float32Array | undefined, eps: number, projected: Float32Array, out: Float32Array): void {
    if (!norm) return this.linear(w, x, rows, out);
    this.linear(w, x, rows, projected);
    this.ops.rmsNorm(projected, rows * count, this.shape.headDim, norm, eps, out);
  }
}

/** One row count's buffers (NativeLayers.buffersFor). */
interface StepBuffers {
  readonly attended: Float32Array;
  readonly afterAttention: Float32Array;
  readonly mlpInput: Float32Array;
  readonly gate: Float32Array;
  readonly up: Float32Array;
  /** q and k before their per-head norms. */
  readonly query: Float32Array;
  readonly key: Float32Array;
  /** The last segment's sampled rows, after the final norm. */
  readonly picked: Float32Array;
  readonly outputs: readonly [InnerSegmentOutput, InnerSegmentOutput];
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

/** The initializer names segment `segment` holds for the layers it computes. */
function innerNames(segment: number) {
  const current = `model.layers.${segment}`;
  return {
    ...outputHalfNames(segment - 1),
    inputNorm: `${current}.input_layernorm.weight`,
    q: linearNames(`${current}.self_attn`, 'q_proj'),
    k: linearNames(`${current}.self_attn`, 'k_proj'),
    v: linearNames(`${current}.self_attn`, 'v_proj'),
    qNorm: `${current}.self_attn.q_norm.weight`,
    kNorm: `${current}.self_attn.k_norm.weight`,
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

function loadInnerSegment(ops: DecoderLayerOps, path: string, segment: number, wiring: SegmentLayerWiring): Loaded<InnerSegment> {
  const names = innerNames(segment);
  const weights = segmentWeights(ops, path, names);
  const half = loadOutputHalf(weights, segment - 1, wiring);
  if ('missing' in half) return half;
  const parts = { q: weights.linear(names.q), k: weights.linear(names.k), v: weights.linear(names.v) };
  for (const [part, value] of Object.entries(parts)) if (!value) return { missing: `${part}_proj weight` };
  const inputNorm = weights.vector(names.inputNorm);
  if (!inputNorm) return { missing: 'input_layernorm weight' };
  // decoder-layer.ts applies a per-head q/k norm only where the checkpoint has its weights.
  const perHead = wiring.qkNorm === 'head';
  const inverseFrequencies = wiring.rope ? Float32Array.from(wiring.rope.inverseFrequencies) : undefined;
  const segmentWeightsOf = { ...half, ...(parts as Record<keyof typeof parts, Linear>), inputNorm, inverseFrequencies };
  return { segment: { ...segmentWeightsOf, qNorm: perHead ? weights.vector(names.qNorm) : undefined, kNorm: perHead ? weights.vector(names.kNorm) : undefined }, bytes: weights.bytes };
}

/** The last segment (`layer` = the last layer), or what is missing. */
function loadHeadSegment(ops: DecoderLayerOps, path: string, layer: number, wiring: SegmentHeadWiring): Loaded<HeadSegment> {
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
  const segment = { ...half, finalNorm, lmHead, logitsMultiplier: wiring.logitsMultiplier, biasIds, biasValues: Float32Array.from(biasIds, (id) => bias![id]!) };
  return { segment, bytes: weights.bytes + packedSize(hidden, vocab) };
}
