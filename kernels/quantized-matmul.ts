// Weight-quantized MatMul for the INT8 and 4-bit (q4, q4f16) variants, as com.microsoft
// MatMulNBits with bits = 8 or 4 and accuracy_level 4. Chosen from the measurement in kernels/README.md: as fast as any int8
// formulation on the lm_head at one row (single-sequence decode), and it quantizes activations
// per row and block, so a row's result never depends on the other rows of its batch. The
// per-tensor DynamicQuantizeMatMul is 1.1–2× faster at 8+ rows but moves a row's output by
// ≈ 1.6 % of its scale depending on its batch neighbours, and errs 2× more with outlier channels.
//
// Math, per output column n and block b of BLOCK_SIZE inputs:
//   weights  q_w = round(w / s_w) + 128 in uint8, s_w = max|w| / 127 over the block
//   row x    q_x = round_half_even(x · (127 / max|x|)) in int8, s_x = max|x| / 127 (fp32 ops)
//   y[n]    += s_x · s_w · Σ q_x · (q_w − 128)
// 4 bits: q_w = round(w / s_w) + 8 in [1, 15], s_w = max|w| / 7, two codes per byte (low nibble
// first along K), the op's default zero point 8; symmetric, so no zero-point input.

import { MS_DOMAIN, type GraphBuilder } from './onnx/graph-builder.js';
import { floatTensor } from './onnx/dtypes.js';
import type { RefTensor } from './reference/tensor.js';

/**
 * Inputs per scale. Of the measured 32 / 128 / 256, 128 is up to 25 % faster than 32 and
 * 1.3–1.5× more accurate than 256 with outlier channels; 1408 = 11 blocks, so no padding.
 */
export const BLOCK_SIZE = 128;

export type WeightBits = 4 | 8;

/** MatMulNBits' default zero point, 2^(bits−1): stored codes are the signed value + it. */
export const zeroPoint = (bits: WeightBits): number => 1 << (bits - 1);

/** MatMulNBits' accuracy_level 4: int8 compute (activations quantized per row and block). */
const ACCURACY_INT8 = 4;

export interface QuantizedWeight {
  /**
   * [outFeatures, blocks, blockSize] uint8, one code per weight (one row per output column),
   * holding round(w / scale) + zeroPoint(bits) in [1, 2·zeroPoint − 1]; a short last block is
   * padded with the zero point. 8-bit codes are MatMulNBits' B as they stand; 4-bit ones are
   * packed two to a byte when written (packNibbles).
   */
  readonly values: Uint8Array;
  readonly bits: WeightBits;
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
export function quantizeRows(matrix: Float32Array, rows: number, rowLength: number, blockSize = BLOCK_SIZE, bits: WeightBits = 8): QuantizedWeight {
  if (matrix.length !== rows * rowLength) throw new Error(`quantizeRows: ${matrix.length} values for [${rows}, ${rowLength}]`);
  const blocks = Math.ceil(rowLength / blockSize);
  const zero = zeroPoint(bits);
  const limit = zero - 1;
  const values = new Uint8Array(rows * blocks * blockSize).fill(zero);
  const scales = new Float32Array(rows * blocks);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < blocks; b++) {
      const from = r * rowLength + b * blockSize;
      const to = r * rowLength + Math.min(rowLength, (b + 1) * blockSize);
      let amax = 0;
      for (let i = from; i < to; i++) amax = Math.max(amax, Math.abs(matrix[i]!));
      // An all-zero block: any scale reproduces it, and 1 avoids dividing by zero.
      const scale = amax > 0 ? Math.fround(amax / limit) : 1;
      scales[r * blocks + b] = scale;
      const out = (r * blocks + b) * blockSize - from;
      for (let i = from; i < to; i++) values[out + i] = zero + Math.max(-limit, Math.min(limit, Math.round(matrix[i]! / scale)));
    }
  }
  return { values, scales, inFeatures: rowLength, outFeatures: rows, blockSize, bits };
}

/**
 * Symmetric 8- or 4-bit quantization of a [in, out] row-major weight (ONNX MatMul's B layout).
 * Each output column has its own scales, one per `blockSize` inputs (block-wise within the column).
 */
export function quantizePerColumn(weight: Float32Array, inFeatures: number, outFeatures: number, blockSize = BLOCK_SIZE, bits: WeightBits = 8): QuantizedWeight {
  const transposed = new Float32Array(weight.length);
  for (let i = 0; i < inFeatures; i++) {
    for (let j = 0; j < outFeatures; j++) transposed[j * inFeatures + i] = weight[i * outFeatures + j]!;
  }
  return quantizeRows(transposed, outFeatures, inFeatures, blockSize, bits);
}

/** Two 4-bit codes per byte, the first (even K index) in the low nibble: MatMulNBits' packing. */
export function packNibbles(codes: Uint8Array): Uint8Array {
  const packed = new Uint8Array(codes.length / 2);
  for (let i = 0; i < packed.length; i++) packed[i] = codes[2 * i]! | (codes[2 * i + 1]! << 4);
  return packed;
}

interface WeightNames {
  readonly values: string;
  readonly scales: string;
}

function addInitializers(g: GraphBuilder, name: string, w: QuantizedWeight): WeightNames {
  // int8 stays a float32-graph variant; 4-bit codes also serve q4f16 (scales in float16, as A).
  if (w.bits === 8 && g.floatType !== 'float32') throw new Error(`quantizedMatMul: int8 weights need a float32 graph, got ${g.floatType}`);
  const blocks = blockCount(w);
  const blob = (w.blockSize * w.bits) / 8;
  const data = w.bits === 4 ? packNibbles(w.values) : w.values;
  return {
    values: g.initializer(`${name}.weight_quantized`, { dtype: 'uint8', dims: [w.outFeatures, blocks, blob], data }),
    scales: g.initializer(`${name}.weight_scale`, floatTensor(g.floatType === 'float16' ? 'float16' : 'float32', [w.outFeatures, blocks], w.scales)),
  };
}

function matMulNBits(g: GraphBuilder, x: string, names: WeightNames, w: QuantizedWeight): string {
  const attrs = { K: w.inFeatures, N: w.outFeatures, bits: w.bits, block_size: w.blockSize, accuracy_level: ACCURACY_INT8 };
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
export function quantizedTiedEmbedding(
  g: GraphBuilder,
  name: string,
  embedding: Float32Array,
  vocab: number,
  hidden: number,
  options: { blockSize?: number; bits?: WeightBits } = {},
): QuantizedTiedEmbedding {
  const weight = quantizeRows(embedding, vocab, hidden, options.blockSize ?? BLOCK_SIZE, options.bits ?? 8);
  const names = addInitializers(g, name, weight);
  return {
    weight,
    lookup: (ids) => dequantizeRows(g, ids, names, weight),
    lmHead: (x) => matMulNBits(g, x, names, weight),
  };
}

/** Gathered packed bytes [.., blocks, blob] → float codes [.., blocks, block] (low nibble first). */
function unpackedCodes(g: GraphBuilder, bytes: string, floatType: 'float32' | 'float16'): string {
  const asFloat = g.op1('Cast', [bytes], { to: floatType === 'float16' ? 10 : 1 });
  const high = g.op1('Floor', [g.op1('Div', [asFloat, g.floats(16, floatType)])]);
  const low = g.op1('Sub', [asFloat, g.op1('Mul', [high, g.floats(16, floatType)])]);
  const pairs = g.op1('Concat', [g.op1('Unsqueeze', [low, g.ints([-1])]), g.op1('Unsqueeze', [high, g.ints([-1])])], { axis: -1 });
  const leading = g.op1('Slice', [g.op1('Shape', [bytes]), g.ints([0]), g.ints([-1])]);
  return g.op1('Reshape', [pairs, g.op1('Concat', [leading, g.ints([-1])], { axis: 0 })]);
}

function dequantizeRows(g: GraphBuilder, ids: string, names: WeightNames, w: QuantizedWeight): string {
  const floatType = g.floatType === 'float16' ? 'float16' : 'float32';
  const gathered = g.op1('Gather', [names.values, ids], { axis: 0 });
  const codes = w.bits === 4 ? unpackedCodes(g, gathered, floatType) : g.op1('Cast', [gathered], { to: 1 }); // [.., blocks, block]
  const scales = g.op1('Unsqueeze', [g.op1('Gather', [names.scales, ids], { axis: 0 }), g.ints([-1])]); // [.., blocks, 1]
  const rows = g.op1('Mul', [g.op1('Sub', [codes, g.floats(zeroPoint(w.bits), floatType)]), scales]);
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
        for (let i = 0; i < to - from; i++) dot += codes[i]! * (w.values[base + i]! - zeroPoint(w.bits));
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
      out[i * w.outFeatures + n] = (w.values[n * blocks * w.blockSize + i]! - zeroPoint(w.bits)) * w.scales[n * blocks + b]!;
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
      out[t * hidden + i] = (w.values[id * blocks * w.blockSize + i]! - zeroPoint(w.bits)) * w.scales[id * blocks + b]!;
    }
  });
  return { dims: [...idDims, hidden], data: out };
}
