// The decoder's tied input embedding / lm_head. One copy of E [vocab, hidden] serves the lookup
// (Gather) and the logits (h · Eᵀ as a Gemm with transB, which ORT pre-packs at load); the INT8
// and 4-bit variants store E once as 8- or 4-bit blocks (MatMulNBits takes [vocab, hidden] as it
// is). The lm_head is most of a small decoder's weights, so at batch-1 decode it is most of the
// bytes a step reads: a q4 variant that kept it in 8 bits would save little.
// Ids past the tokenizer get a large negative logit bias so they can never be sampled.

import { isFourBit, Q4_BLOCK_SIZE, type WeightPrecision } from '../../kernels/linear.js';
import { quantizedTiedEmbedding } from '../../kernels/quantized-matmul.js';
import { floatTensor } from '../../kernels/onnx/dtypes.js';
import type { GraphBuilder } from '../../kernels/onnx/graph-builder.js';
import { DEFAULT_DECODER_VARIANT, type DecoderConfig } from './config.js';

export interface TiedEmbedding {
  /** ids [B, S] int64 → [B, S, hidden]. */
  lookup(ids: string): string;
  /** hidden [B, S', hidden] → logits [B, S', vocab]. */
  lmHead(hidden: string): string;
  /** hidden [L, hidden] → logits [L, vocab], no reshapes (the paged graph's flat rows). */
  lmHeadRows(rows: string): string;
}

/** Far below any real logit, and still finite in fp16. */
const UNUSED_ID_LOGIT = -1e4;

/**
 * `lmHeadWeight` ([vocab, hidden], a checkpoint's own lm_head.weight) unties the two: the lookup
 * reads the embedding and the logits read it; without it one table serves both.
 */
export function tiedEmbedding(g: GraphBuilder, name: string, embedding: Float32Array, c: DecoderConfig, precision: WeightPrecision, lmHeadWeight?: Float32Array): TiedEmbedding {
  const bias = new Float32Array(c.vocabSize).fill(UNUSED_ID_LOGIT, c.tokenizerVocabSize);
  const logitBias = g.initializer('lm_head.unused_id_bias', floatTensor(g.floatType, [c.vocabSize], bias));
  const input = embeddingTable(g, name, embedding, c, precision);
  const output = lmHeadWeight ? embeddingTable(g, 'lm_head', lmHeadWeight, c, precision) : input;
  const { embeddingMultiplier, logitsMultiplier, finalLogitSoftcap } = c.variant ?? DEFAULT_DECODER_VARIANT;
  const lookup = (ids: string): string => (embeddingMultiplier === 1 ? input.lookup(ids) : g.op1('Mul', [input.lookup(ids), g.floats(embeddingMultiplier)]));
  if (logitsMultiplier === 1 && finalLogitSoftcap === undefined) {
    return { lookup, lmHead: (hidden) => output.lmHead(hidden, logitBias), lmHeadRows: (rows) => output.lmHeadRows(rows, logitBias) };
  }
  // Granite's 1/logits_scaling and Gemma's soft cap apply to the model's logits; the unused-id
  // bias comes after them, so a capped logit can never lift an id the tokenizer lacks.
  const shaped = (logits: string): string => {
    let out = logitsMultiplier === 1 ? logits : g.op1('Mul', [logits, g.floats(logitsMultiplier)]);
    if (finalLogitSoftcap !== undefined) out = g.op1('Mul', [g.op1('Tanh', [g.op1('Div', [out, g.floats(finalLogitSoftcap)])]), g.floats(finalLogitSoftcap)]);
    return g.op1('Add', [out, logitBias]);
  };
  return { lookup, lmHead: (hidden) => shaped(output.lmHead(hidden)), lmHeadRows: (rows) => shaped(output.lmHeadRows(rows)) };
}

function embeddingTable(
  g: GraphBuilder,
  name: string,
  matrix: Float32Array,
  c: DecoderConfig,
  precision: WeightPrecision,
): { lookup(ids: string): string; lmHead(hidden: string, bias?: string): string; lmHeadRows(rows: string, bias?: string): string } {
  if (precision === 'int8' || isFourBit(precision)) {
    const options = isFourBit(precision) ? { bits: 4 as const, blockSize: Q4_BLOCK_SIZE } : {};
    const quantized = quantizedTiedEmbedding(g, name, matrix, c.vocabSize, c.hiddenSize, options);
    const lmHead = (hidden: string, bias?: string): string => (bias ? g.op1('Add', [quantized.lmHead(hidden), bias]) : quantized.lmHead(hidden));
    return { lookup: quantized.lookup, lmHead, lmHeadRows: lmHead };
  }
  const table = g.weight(`${name}.weight`, [c.vocabSize, c.hiddenSize], matrix);
  return {
    lookup: (ids) => g.op1('Gather', [table, ids], { axis: 0 }),
    lmHead: (hidden, bias) => {
      const rows = g.op1('Reshape', [hidden, g.ints([-1, c.hiddenSize])]);
      const logits = g.op1('Gemm', bias ? [rows, table, bias] : [rows, table], { transB: 1 });
      const leading = g.op1('Slice', [g.op1('Shape', [hidden]), g.ints([0]), g.ints([2])]);
      return g.op1('Reshape', [logits, g.op1('Concat', [leading, g.ints([c.vocabSize])], { axis: 0 })]);
    },
    lmHeadRows: (rows, bias) => g.op1('Gemm', bias ? [rows, table, bias] : [rows, table], { transB: 1 }),
  };
}
