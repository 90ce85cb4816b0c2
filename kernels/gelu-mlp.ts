// GELU MLP (BERT feed-forward): output(gelu(intermediate(x))) with the exact erf form
// gelu(z) = z/2 · (1 + erf(z/√2)), the one BERT was trained with (not the tanh approximation).
// Written with standard ops; ORT fuses the pattern into its Gelu kernel at load time.

import { linear, type LinearWeights, type Precision } from './linear.js';
import type { GraphBuilder } from './onnx/graph-builder.js';
import { refMatMul, type RefTensor } from './reference/tensor.js';

export interface GeluMlpWeights {
  readonly intermediate: LinearWeights;
  readonly output: LinearWeights;
}

/** Hugging Face BERT's names for the two projections, relative to `encoder.layer.{i}`. */
export const BERT_MLP_NAMES = { intermediate: 'intermediate.dense', output: 'output.dense' } as const;

export function geluMlp(g: GraphBuilder, x: string, w: GeluMlpWeights, precision: Precision, names: { intermediate: string; output: string } = BERT_MLP_NAMES): string {
  const hidden = linear(g, x, names.intermediate, w.intermediate, precision);
  return linear(g, gelu(g, hidden), names.output, w.output, precision);
}

export function gelu(g: GraphBuilder, z: string): string {
  const erf = g.op1('Erf', [g.op1('Div', [z, g.floats(Math.SQRT2)])]);
  return g.op1('Mul', [g.op1('Mul', [z, g.op1('Add', [erf, g.floats(1)])]), g.floats(0.5)]);
}

export function geluMlpReference(x: RefTensor, w: GeluMlpWeights): RefTensor {
  const hidden = refLinear(x, w.intermediate);
  const activated = hidden.data.map((z) => 0.5 * z * (1 + erf(z / Math.SQRT2)));
  return refLinear({ dims: hidden.dims, data: activated }, w.output);
}

/** x · W + b in float64 for a LinearWeights (shared by the encoder kernels' references). */
export function refLinear(x: RefTensor, w: LinearWeights): RefTensor {
  const y = refMatMul(x, { dims: [w.inFeatures, w.outFeatures], data: Float64Array.from(w.weight) });
  if (w.bias) {
    for (let i = 0; i < y.data.length; i++) y.data[i]! += w.bias[i % w.outFeatures]!;
  }
  return y;
}

/**
 * erf to ~1e-15 (JavaScript has no Math.erf). Maclaurin series where it converges without
 * cancellation, the erfc continued fraction beyond; past |x| = 6, erf is ±1 in float64.
 */
export function erf(x: number): number {
  const a = Math.abs(x);
  if (a >= 6) return Math.sign(x);
  if (a < 2.5) {
    let term = x;
    let sum = x;
    for (let n = 1; Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
      term *= (-x * x) / n;
      sum += term / (2 * n + 1);
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc(a) = exp(-a²)/√π · 1/(a + (1/2)/(a + 1/(a + (3/2)/(a + …)))), evaluated from the tail.
  let tail = a;
  for (let n = 120; n >= 1; n--) tail = a + n / 2 / tail;
  const erfc = Math.exp(-a * a) / Math.sqrt(Math.PI) / tail;
  return Math.sign(x) * (1 - erfc);
}
