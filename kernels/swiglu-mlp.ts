// SwiGLU MLP (LLaMA / Qwen): down(silu(gate(x)) ⊙ up(x)), silu(z) = z·sigmoid(z).

import { linear, type LinearWeights, type WeightPrecision } from './linear.js';
import type { GraphBuilder } from './onnx/graph-builder.js';
import { refMatMul, type RefTensor } from './reference/tensor.js';

export interface SwigluWeights {
  readonly gate: LinearWeights;
  readonly up: LinearWeights;
  readonly down: LinearWeights;
}

/** Initializers: `gate_proj.weight`, `up_proj.weight`, `down_proj.weight` in the current scope. */
export function swigluMlp(g: GraphBuilder, x: string, w: SwigluWeights, precision: WeightPrecision): string {
  const gate = linear(g, x, 'gate_proj', w.gate, precision);
  const up = linear(g, x, 'up_proj', w.up, precision);
  const activated = g.op1('Mul', [gate, g.op1('Sigmoid', [gate])]);
  return linear(g, g.op1('Mul', [activated, up]), 'down_proj', w.down, precision);
}

export function swigluMlpReference(x: RefTensor, w: SwigluWeights): RefTensor {
  const asRef = (l: LinearWeights): RefTensor => ({ dims: [l.inFeatures, l.outFeatures], data: Float64Array.from(l.weight) });
  const gate = refMatMul(x, asRef(w.gate));
  const up = refMatMul(x, asRef(w.up));
  const hidden = gate.data.map((z, i) => (z / (1 + Math.exp(-z))) * up.data[i]!);
  return refMatMul({ dims: gate.dims, data: hidden }, asRef(w.down));
}
