// A linear layer in the precision of the variant being built: fp32 or fp16 weights (the graph's
// float type), 8-bit or 4-bit block-quantized weights (kernels/quantized-matmul.ts). Every model
// builder goes through here, so a variant is one argument, not a second builder.

import type { GraphBuilder } from './onnx/graph-builder.js';
import { quantizePerColumn, quantizedMatMul } from './quantized-matmul.js';

/** The variants every builder writes. */
export type Precision = 'fp32' | 'fp16' | 'int8';

/** Plus the 4-bit ones (decoders only): q4 in a float32 graph, q4f16 in a float16 one. */
export type WeightPrecision = Precision | 'q4' | 'q4f16';

/**
 * Inputs per 4-bit scale: 128, the group size of GPTQ's and AWQ's usual checkpoints. llama.cpp's
 * Q4_0 block of 32 is more accurate but ORT's 4-bit MatMulNBits spends its time on the scales
 * there: on an AVX-512 Xeon a whole decode step at one row ran 1.15–1.2× faster with 128
 * (kernels/README.md, "4-bit weights").
 */
export const Q4_BLOCK_SIZE = 128;

export const isFourBit = (precision: WeightPrecision): precision is 'q4' | 'q4f16' => precision === 'q4' || precision === 'q4f16';

/** int8 and 4-bit: MatMulNBits weights rather than the graph's float type. */
export const isWeightQuantized = (precision: WeightPrecision): boolean => precision === 'int8' || isFourBit(precision);

export interface LinearWeights {
  readonly inFeatures: number;
  readonly outFeatures: number;
  /** [inFeatures, outFeatures] row-major (ONNX MatMul's B layout). */
  readonly weight: Float32Array;
  readonly bias?: Float32Array;
}

/** Initializers are named `{name}.weight` / `{name}.bias` inside the current scope. */
export function linear(g: GraphBuilder, x: string, name: string, w: LinearWeights, precision: WeightPrecision): string {
  let y: string;
  if (precision === 'int8') {
    y = quantizedMatMul(g, x, name, quantizePerColumn(w.weight, w.inFeatures, w.outFeatures));
  } else if (isFourBit(precision)) {
    y = quantizedMatMul(g, x, name, quantizePerColumn(w.weight, w.inFeatures, w.outFeatures, Q4_BLOCK_SIZE, 4));
  } else {
    y = g.op1('MatMul', [x, g.weight(`${name}.weight`, [w.inFeatures, w.outFeatures], w.weight)]);
  }
  if (!w.bias) return y;
  // Biases stay in the graph's float type: they are tiny and quantizing them buys nothing.
  return g.op1('Add', [y, g.weight(`${name}.bias`, [w.outFeatures], w.bias)]);
}

/**
 * Linears that read the same input (a layer's q, k and v projections) as one: a weight of all their
 * columns side by side, one MatMul, then a Split back into the parts. At one decode row each
 * projection is a dispatch more than arithmetic (512 → 128 took as long as 512 → 512); one node
 * for three saved ~80 µs a layer with two threads (kernels/README.md). Quantization is per output
 * column, so the fused weight's codes and scales are each part's own: exact, not an approximation.
 */
export function fusedLinear(g: GraphBuilder, x: string, name: string, parts: readonly LinearWeights[], precision: WeightPrecision): string[] {
  const y = linear(g, x, name, concatColumns(parts), precision);
  return g.op('Split', [y, g.ints(parts.map((part) => part.outFeatures))], { axis: -1 }, { outputs: parts.length });
}

/** [in, a] ‖ [in, b] ‖ … → [in, a + b + …] row-major, biases likewise (a part without one adds zeros). */
export function concatColumns(parts: readonly LinearWeights[]): LinearWeights {
  const inFeatures = parts[0]!.inFeatures;
  const mismatch = parts.find((part) => part.inFeatures !== inFeatures);
  if (mismatch) throw new Error(`concatColumns: input widths ${inFeatures} and ${mismatch.inFeatures} differ`);
  const outFeatures = parts.reduce((sum, part) => sum + part.outFeatures, 0);
  const weight = new Float32Array(inFeatures * outFeatures);
  const biased = parts.some((part) => part.bias);
  const bias = biased ? new Float32Array(outFeatures) : undefined;
  let column = 0;
  for (const part of parts) {
    const width = part.outFeatures;
    for (let row = 0; row < inFeatures; row++) weight.set(part.weight.subarray(row * width, (row + 1) * width), row * outFeatures + column);
    if (bias && part.bias) bias.set(part.bias, column);
    column += width;
  }
  return bias ? { inFeatures, outFeatures, weight, bias } : { inFeatures, outFeatures, weight };
}
