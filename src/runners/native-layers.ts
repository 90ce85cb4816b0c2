// The segmented decoder's inner segments (1 .. numLayers − 1: layer i − 1's o_proj, residual and
// MLP, then layer i's input norm, q/k/v, q/k norms and RoPE) computed with the native kernel's
// layer ops (src/runtime/native/decoder-ops.h) on steps of a few rows, in place of their ONNX
// Runtime sessions. At a few rows a step is bound by reading the weights once, and ORT's fp32
// MatMul computes each extra row without overlapping it with that read: on the copier a 5-row
// verify step's ORT segments took 1.3-1.4× a 1-row decode step's; the packed linears read each
// weight panel once for all rows (bench/results, "native layers"). Steps of more rows (prefill,
// many streams) stay in ORT, whose blocked GEMM is the faster there.
//
// The same arithmetic as the segment's graph (models/qwen3/decoder-layer.ts), read from the
// segment itself: its wiring from the conveyor.decoder_layer metadata, its float32 weights from
// its initializers, packed once at load (a second copy of those weights: ORT keeps its own for
// the larger steps). Families whose wiring the ops do not cover (norms after the blocks, a q/k
// norm over the whole projection), quantized or float16 weights, and segments written before the
// metadata existed keep every step in ORT, with the reason in the runner's note.

import { DECODER_LAYER_PROPERTY, type SegmentLayerWiring } from '../contracts/paged-segments.js';
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

/** Segment i's weights: layer i − 1's output half, layer i's input half. */
interface InnerSegment {
  readonly wiring: SegmentLayerWiring;
  readonly o: Linear;
  readonly postAttentionNorm: Float32Array;
  readonly gate: Linear;
  readonly up: Linear;
  readonly down: Linear;
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

export class NativeLayers {
  private constructor(
    private readonly ops: DecoderLayerOps,
    private readonly shape: LayerShape & { hiddenSize: number; intermediateSize: number },
    /** Index i − 1 holds segment i. */
    private readonly inner: readonly InnerSegment[],
    private readonly threads: number,
    /** Bytes of the packed weights. */
    readonly packedBytes: number,
  ) {}

  /** Each row count's buffers, by rows (at most NATIVE_LAYER_MAX_ROWS entries). */
  private readonly buffers = new Map<number, StepBuffers>();

  /**
   * Packs segments 1 .. n − 2 of `segmentPaths` (all n segments' files, in order; `properties` their
   * metadata_props). Unavailable, with the reason, where any of them cannot run natively.
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
    const first = inner[0]!;
    return { layers: new NativeLayers(ops, { ...shape, hiddenSize: first.o.packed.outFeatures, intermediateSize: first.gate.packed.outFeatures }, inner, threads, packedBytes) };
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
    const { hiddenSize, intermediateSize, numHeads, numKvHeads, headDim } = this.shape;
    const eps = s.wiring.rmsNormEps;
    const b = this.buffersFor(rows);
    const out = b.outputs[segment % 2]!;
    // Layer i − 1's output half: o_proj, the residual add and norm, the gated MLP.
    this.linear(s.o, attention, rows, b.attended);
    this.ops.addRmsNorm(residual, b.attended, rows, hiddenSize, s.postAttentionNorm, eps, b.afterAttention, b.mlpInput);
    this.linear(s.gate, b.mlpInput, rows, b.gate);
    this.linear(s.up, b.mlpInput, rows, b.up);
    this.ops.gatedActivation(b.gate, b.up, rows * intermediateSize, s.wiring.activation);
    this.linear(s.down, b.gate, rows, b.attended);
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
  readonly outputs: readonly [InnerSegmentOutput, InnerSegmentOutput];
}

/** The initializer names segment `segment` holds for the layers it computes (decoder-layer.ts's scopes). */
function weightNames(segment: number) {
  const [previous, current] = [`model.layers.${segment - 1}`, `model.layers.${segment}`];
  const linear = (scope: string, name: string) => ({ weight: `${scope}.${name}.weight`, bias: `${scope}.${name}.bias` });
  return {
    o: linear(`${previous}.self_attn`, 'o_proj'),
    postAttentionNorm: `${previous}.post_attention_layernorm.weight`,
    gate: linear(`${previous}.mlp`, 'gate_proj'),
    up: linear(`${previous}.mlp`, 'up_proj'),
    down: linear(`${previous}.mlp`, 'down_proj'),
    inputNorm: `${current}.input_layernorm.weight`,
    q: linear(`${current}.self_attn`, 'q_proj'),
    k: linear(`${current}.self_attn`, 'k_proj'),
    v: linear(`${current}.self_attn`, 'v_proj'),
    qNorm: `${current}.self_attn.q_norm.weight`,
    kNorm: `${current}.self_attn.k_norm.weight`,
  };
}

function loadInnerSegment(ops: DecoderLayerOps, path: string, segment: number, wiring: SegmentLayerWiring): { segment: InnerSegment; bytes: number } | { missing: string } {
  const names = weightNames(segment);
  const wanted = new Set(Object.values(names).flatMap((name) => (typeof name === 'string' ? [name] : [name.weight, name.bias])));
  const found = readFloatInitializers(path, wanted);
  let bytes = 0;
  const vector = (name: string) => found.get(name)?.data;
  const linear = ({ weight, bias }: { weight: string; bias: string }): Linear | undefined => {
    const w = found.get(weight);
    if (w?.dims.length !== 2) return undefined;
    const [inFeatures, outFeatures] = w.dims as [number, number];
    bytes += 4 * inFeatures * Math.ceil(outFeatures / 64) * 64;
    return { packed: ops.packLinear(w.data, inFeatures, outFeatures), bias: vector(bias) };
  };
  const parts = { o: linear(names.o), gate: linear(names.gate), up: linear(names.up), down: linear(names.down), q: linear(names.q), k: linear(names.k), v: linear(names.v) };
  for (const [part, value] of Object.entries(parts)) if (!value) return { missing: `${part}_proj weight` };
  const [postAttentionNorm, inputNorm] = [vector(names.postAttentionNorm), vector(names.inputNorm)];
  if (!postAttentionNorm || !inputNorm) return { missing: 'norm weight' };
  // decoder-layer.ts applies a per-head q/k norm only where the checkpoint has its weights.
  const perHead = wiring.qkNorm === 'head';
  const inverseFrequencies = wiring.rope ? Float32Array.from(wiring.rope.inverseFrequencies) : undefined;
  return {
    segment: {
      wiring,
      ...(parts as Record<keyof typeof parts, Linear>),
      postAttentionNorm,
      inputNorm,
      qNorm: perHead ? vector(names.qNorm) : undefined,
      kNorm: perHead ? vector(names.kNorm) : undefined,
      inverseFrequencies,
    },
    bytes,
  };
}
