// Weight-quantized MatMul for the INT8 variants, as com.microsoft MatMulNBits with bits = 8 and
// accuracy_level 4. Chosen from the measurement in kernels/README.md: as fast as any int8
// formulation on the lm_head at one row (single-sequence decode), and it quantizes activations
// per row and block, so a row's result never depends on the other rows of its batch. The
// per-tensor DynamicQuantizeMatMul is 1.1–2× faster at 8+ rows but moves a row's output by
// ≈ 1.6 % of its scale depending on its batch neighbours, and errs 2× more with outlier channels.
//
// Math, per output column n and block b of BLOCK_SIZE inputs:
//   weights  q_w = round(w / s_w) + 128 in uint8, s_w = max|w| / 127 over the block
//   row x    q_x = round_half_even(x · (127 / max|x|)) in int8, s_x = max|x| / 127 (fp32 ops)
//   y[n]    += s_x · s_w · Σ q_x · (q_w − 128)

import { MS_DOMAIN, type GraphBuilder } from './onnx/graph-builder.js';
import type { RefTensor } from './reference/tensor.js';

/**
 * Inputs per scale. Of the measured 32 / 128 / 256, 128 is up to 25 % faster than 32 and
 * 1.3–1.5× more accurate than 256 with outlier channels; 1408 = 11 blocks, so no padding.
 */
export const BLOCK_SIZE = 128;

/** MatMulNBits' default zero point for 8 bits: stored bytes are the signed value + 128. */
const ZERO_POINT = 128;

/** MatMulNBits' accuracy_level 4: int8 compute (activations quantized per row and block). */
const ACCURACY_INT8 = 4;

export interface QuantizedWeight {
  /**
   * [outFeatures, blocks, blockSize] uint8 (MatMulNBits' B layout: one row per output column),
   * holding round(w / scale) + 128 in [1, 255]; a short last block is padded with 128 (zero).
   */
  readonly values: Uint8Array;
  /** [outFeatures, blocks]: one symmetric scale per block of `blockSize` inputs of a column. */
  readonly scales: Float32Array;
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly blockSize: number;
}

export function blockCount(w: Pick<QuantizedWeight, 'inFeatures' | 'blockSize'>): number {
  return Math.ceil(w.inFeatures / w.blockSize);
}

/**
 * Quantizes a [rows, rowLength] row-major matrix whose rows are output columns, i.e. the weight
 * already transposed. An embedding table [vocab, hidden] is in this layout as it stands, which is
 * what lets the tied lm_head share it.
 */
export function quantizeRows(matrix: Float32Array, rows: number, rowLength: number, blockSize = BLOCK_SIZE): QuantizedWeight {
  if (matrix.length !== rows * rowLength) throw new Error(`quantizeRows: ${matrix.length} values for [${rows}, ${rowLength}]`);
  const blocks = Math.ceil(rowLength / blockSize);
  const values = new Uint8Array(rows * blocks * blockSize).fill(ZERO_POINT);
  const scales = new Float32Array(rows * blocks);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < blocks; b++) {
      const from = r * rowLength + b * blockSize;
      const to = r * rowLength + Math.min(rowLength, (b + 1) * blockSize);
      let amax = 0;
      for (let i = from; i < to; i++) amax = Math.max(amax, Math.abs(matrix[i]!));
      // An all-zero block: any scale reproduces it, and 1 avoids dividing by zero.
      const scale = amax > 0 ? Math.fround(amax / 127) : 1;
      scales[r * blocks + b] = scale;
      const out = (r * blocks + b) * blockSize - from;
      for (let i = from; i < to; i++) values[out + i] = ZERO_POINT + Math.max(-127, Math.min(127, Math.round(matrix[i]! / scale)));
    }
  }
  return { values, scales, inFeatures: rowLength, outFeatures: rows, blockSize };
}

/**
 * Symmetric int8 quantization of a [in, out] row-major weight (ONNX MatMul's B layout). Each
 * output column has its own scales, one per BLOCK_SIZE inputs (block-wise within the column).
 */
export function quantizePerColumn(weight: Float32Array, inFeatures: number, outFeatures: number): QuantizedWeight {
  const transposed = new Float32Array(weight.length);
  for (let i = 0; i < inFeatures; i++) {
    for (let j = 0; j < outFeatures; j++) transposed[j * inFeatures + i] = weight[i * outFeatures + j]!;
  }
  return quantizeRows(transposed, outFeatures, inFeatures);
}

interface WeightNames {
  readonly values: string;
  readonly scales: string;
}

function addInitializers(g: GraphBuilder, name: string, w: QuantizedWeight): WeightNames {
  if (g.floatType !== 'float32') throw new Error(`quantizedMatMul: int8 weights need a float32 graph, got ${g.floatType}`);
  const blocks = blockCount(w);
  return {
    values: g.initializer(`${name}.weight_quantized`, { dtype: 'uint8', dims: [w.outFeatures, blocks, w.blockSize], data: w.values }),
    scales: g.initializer(`${name}.weight_scale`, { dtype: 'float32', dims: [w.outFeatures, blocks], data: w.scales }),
  };
}

function matMulNBits(g: GraphBuilder, x: string, names: WeightNames, w: QuantizedWeight): string {
  const attrs = { K: w.inFeatures, N: w.outFeatures, bits: 8, block_size: w.blockSize, accuracy_level: ACCURACY_INT8 };
  return g.op1('MatMulNBits', [x, names.values, names.scales], attrs, { domain: MS_DOMAIN });
}

/** x [.., in] · W → [.., out]. `name` scopes the initializers (`{name}.weight_quantized`, `{name}.weight_scale`). */
export function quantizedMatMul(g: GraphBuilder, x: string, name: string, w: QuantizedWeight): string {
  return matMulNBits(g, x, addInitializers(g, name, w), w);
}

export interface QuantizedTiedEmbedding {
  /** The one quantized table: inFeatures = hidden, outFeatures = vocab (row v is token v's embedding). */
  readonly weight: QuantizedWeight;
  /** ids (int64, any shape) → [...ids shape, hidden] float32, the dequantized embedding rows. */
  lookup(ids: string): string;
  /** x [.., hidden] → logits [.., vocab] = x · Eᵀ, through the same int8 table. */
  lmHead(x: string): string;
}

/**
 * Input embedding and lm_head tied to one int8 table E [vocab, hidden]. MatMulNBits reads its B
 * as [N, K] = [vocab, hidden], which is E's own layout, so the file stores the int8 data once
 * and the lookup gathers rows straight from the lm_head's initializer.
 */
export function quantizedTiedEmbedding(g: GraphBuilder, name: string, embedding: Float32Array, vocab: number, hidden: number): QuantizedTiedEmbedding {
  const weight = quantizeRows(embedding, vocab, hidden);
  const names = addInitializers(g, name, weight);
  return {
    weight,
    lookup: (ids) => dequantizeRows(g, ids, names, weight),
    lmHead: (x) => matMulNBits(g, x, names, weight),
  };
}

function dequantizeRows(g: GraphBuilder, ids: string, names: WeightNames, w: QuantizedWeight): string {
  const codes = g.op1('Cast', [g.op1('Gather', [names.values, ids], { axis: 0 })], { to: 1 }); // [.., blocks, block]
  const scales = g.op1('Unsqueeze', [g.op1('Gather', [names.scales, ids], { axis: 0 }), g.ints([-1])]); // [.., blocks, 1]
  const rows = g.op1('Mul', [g.op1('Sub', [codes, g.floats(ZERO_POINT, 'float32')]), scales]);
  const padded = blockCount(w) * w.blockSize;
  const flat = g.op1('Reshape', [rows, g.op1('Concat', [g.op1('Shape', [ids]), g.ints([padded])], { axis: 0 })]);
  if (padded === w.inFeatures) return flat;
  return g.op1('Slice', [flat, g.ints([0]), g.ints([w.inFeatures]), g.ints([-1])]);
}

/** The int8 codes and scale MatMulNBits derives from one block of an fp32 activation row. */
function quantizeActivationBlock(x: Float64Array, from: number, to: number, codes: Int8Array): number {
  let amax = 0;
  for (let i = from; i < to; i++) amax = Math.max(amax, Math.abs(Math.fround(x[i]!)));
  // fp32 division and product, as the runtime does them; rounding is half-to-even.
  const inverse = amax > 0 ? Math.fround(127 / amax) : 0;
  for (let i = from; i < to; i++) codes[i - from] = roundHalfEven(Math.fround(Math.fround(x[i]!) * inverse));
  return Math.fround(amax / 127);
}

function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Float64 reference of the exact math the graph computes, activation quantization included: the
 * graph matches it to fp32 accumulation error. (Against the unquantized x · W it differs by the
 * quantization error, ≈ 0.5 % of the output scale; see the test.)
 */
export function quantizedMatMulReference(x: RefTensor, w: QuantizedWeight): RefTensor {
  const k = w.inFeatures;
  const blocks = blockCount(w);
  const rows = x.data.length / k;
  const out = new Float64Array(rows * w.outFeatures);
  const codes = new Int8Array(w.blockSize);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < blocks; b++) {
      const from = r * k + b * w.blockSize;
      const to = r * k + Math.min(k, (b + 1) * w.blockSize);
      const xScale = quantizeActivationBlock(x.data, from, to, codes);
      if (xScale === 0) continue;
      for (let n = 0; n < w.outFeatures; n++) {
        const base = (n * blocks + b) * w.blockSize;
        let dot = 0;
        for (let i = 0; i < to - from; i++) dot += codes[i]! * (w.values[base + i]! - ZERO_POINT);
        out[r * w.outFeatures + n]! += xScale * w.scales[n * blocks + b]! * dot;
      }
    }
  }
  return { dims: [...x.dims.slice(0, -1), w.outFeatures], data: out };
}

/** The dequantized weight as a float64 [in, out] matrix (what x · W is measured against). */
export function dequantizeWeight(w: QuantizedWeight): RefTensor {
  const blocks = blockCount(w);
  const out = new Float64Array(w.inFeatures * w.outFeatures);
  for (let n = 0; n < w.outFeatures; n++) {
    for (let i = 0; i < w.inFeatures; i++) {
      const b = Math.floor(i / w.blockSize);
      out[i * w.outFeatures + n] = (w.values[n * blocks * w.blockSize + i]! - ZERO_POINT) * w.scales[n * blocks + b]!;
    }
  }
  return { dims: [w.inFeatures, w.outFeatures], data: out };
}

/** Float64 reference of the tied lookup: row `id` of the dequantized table for every id. */
export function embeddingLookupReference(ids: readonly number[], idDims: readonly number[], w: QuantizedWeight): RefTensor {
  const hidden = w.inFeatures;
  const blocks = blockCount(w);
  const out = new Float64Array(ids.length * hidden);
  ids.forEach((id, t) => {
    for (let i = 0; i < hidden; i++) {
      const b = Math.floor(i / w.blockSize);
      out[t * hidden + i] = (w.values[id * blocks * w.blockSize + i]! - ZERO_POINT) * w.scales[id * blocks + b]!;
    }
  });
  return { dims: [...idDims, hidden], data: out };
}
