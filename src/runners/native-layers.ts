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

import {
  DECODER_EMBEDDING_PROPERTY,
  DECODER_HEAD_PROPERTY,
  DECODER_LAYER_PROPERTY,
  type SegmentEmbeddingWiring,
  type SegmentHeadWiring,
  type SegmentLayerWiring,
} from '../contracts/paged-segments.js';
import type { DecoderLayerOps } from '../runtime/paged-attention-kernel.js';
import { type FirstSegment, type HeadSegment, type InnerSegment, type InputHalf, type Linear, loadFirstSegment, loadHeadSegment, loadInnerSegment, type OutputHalf } from './native-layer-weights.js';

/**
 * Rows up to which a step's inner segments run natively: the packed linear keeps 8 rows'
 * accumulators in registers, so up to 8 rows read the weights once; past that it reads them
 * again per 8 rows, where ORT's blocked GEMM reuses them from cache.
 */
export const NATIVE_LAYER_MAX_ROWS = 8;

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

/** The layer ops' sizes: the model's head layout, and the hidden and MLP widths of its projections. */
function layerShapeOf(shape: LayerShape, inner: readonly InnerSegment[]): LayerShape & { hiddenSize: number; intermediateSize: number } {
  const first = inner[0]!;
  return { ...shape, hiddenSize: first.o.packed.outFeatures, intermediateSize: first.gate.packed.outFeatures };
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
    /** Segment 0, where it can run natively (with the last one: a tied table is the lm_head's). */
    private readonly firstSegment: FirstSegment | undefined,
    private readonly threads: number,
    /** Bytes of the packed weights. */
    readonly packedBytes: number,
    /** Why the first or last segment stays in ONNX Runtime; undefined where both run natively. */
    readonly endsUnavailable: string | undefined,
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
    if ('unavailable' in head) {
      return { layers: new NativeLayers(ops, layerShapeOf(shape, inner), inner, undefined, undefined, threads, packedBytes, `segment 0 and the last segment in ONNX Runtime (${head.unavailable})`) };
    }
    const first = NativeLayers.openFirst(ops, segmentPaths[0]!, properties[0], head.segment);
    const bytes = packedBytes + head.bytes + ('segment' in first ? first.bytes : 0);
    const why = 'unavailable' in first ? `the last segment (final norm, lm_head) too, segment 0 in ONNX Runtime (${first.unavailable})` : undefined;
    return { layers: new NativeLayers(ops, layerShapeOf(shape, inner), inner, head.segment, 'segment' in first ? first.segment : undefined, threads, bytes, why) };
  }

  /** Segment 0, where the head runs natively too (a step then has no ORT call at all). */
  private static openFirst(
    ops: DecoderLayerOps,
    path: string,
    properties: Readonly<Record<string, string>> | undefined,
    head: HeadSegment,
  ): { segment: FirstSegment; bytes: number } | { unavailable: string } {
    const [embedding, layer] = [properties?.[DECODER_EMBEDDING_PROPERTY], properties?.[DECODER_LAYER_PROPERTY]];
    if (embedding === undefined || layer === undefined) return { unavailable: `no ${DECODER_EMBEDDING_PROPERTY} metadata (converted before it existed)` };
    const wiring = JSON.parse(layer) as SegmentLayerWiring;
    const reason = unsupported(wiring);
    if (reason) return { unavailable: reason };
    const { multiplier } = JSON.parse(embedding) as SegmentEmbeddingWiring;
    const loaded = loadFirstSegment(ops, path, wiring, multiplier, head.tied ? head.lmHead : undefined);
    return 'missing' in loaded ? { unavailable: `no float32 ${loaded.missing}` } : loaded;
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

  /** True where segment 0 runs natively too (first()). */
  get hasFirst(): boolean {
    return this.firstSegment !== undefined;
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
    const b = this.buffersFor(rows);
    const out = b.outputs[segment % 2]!;
    this.outputHalf(s, residual, attention, rows, b);
    // Layer i's input half, after the residual add and its input norm.
    this.ops.addRmsNorm(b.afterAttention, b.attended, rows, this.shape.hiddenSize, s.inputNorm, s.wiring.rmsNormEps, out.hidden, b.mlpInput);
    return this.inputHalf(s, rows, positions, b, out);
  }

  /** Segment 0's outputs for the tokens `ids` at `positions` (as run()'s; the embedding rows are the residual). */
  first(ids: BigInt64Array, positions: BigInt64Array): InnerSegmentOutput {
    const s = this.firstSegment;
    if (!s) throw new Error(`segment 0 runs in ONNX Runtime here: ${this.endsUnavailable}`);
    const rows = ids.length;
    const b = this.buffersFor(rows);
    const out = b.outputs[0];
    this.ops.gatherColumns(s.table, ids, out.hidden);
    if (s.multiplier !== 1) for (let i = 0; i < out.hidden.length; i++) out.hidden[i]! *= s.multiplier;
    this.ops.rmsNorm(out.hidden, rows, this.shape.hiddenSize, s.inputNorm, s.wiring.rmsNormEps, b.mlpInput);
    return this.inputHalf(s, rows, positions, b, out);
  }

  /** A layer's input half from its normed input (b.mlpInput) into `out`: q (per-head norm, RoPE, scale), k (norm, RoPE), v. */
  private inputHalf(s: InputHalf, rows: number, positions: BigInt64Array, b: StepBuffers, out: InnerSegmentOutput): InnerSegmentOutput {
    const { numHeads, numKvHeads, headDim } = this.shape;
    const eps = s.wiring.rmsNormEps;
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
    if (!s) throw new Error(`the last segment runs in ONNX Runtime here: ${this.endsUnavailable}`);
    const { hiddenSize } = this.shape;
    const b = this.buffersFor(rows);
    this.outputHalf(s, residual, attention, rows, b);
    // The sum is not an output here: any hidden buffer takes it (the residual was read above).
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
