// Gated MLP: down(act(gate(x)) ⊙ up(x)). SwiGLU (LLaMA / Qwen): act = silu(z) = z·sigmoid(z);
// GeGLU (Gemma): act = GELU's tanh approximation, PyTorch's gelu(approximate="tanh").

import { linear, type LinearWeights, type WeightPrecision } from './linear.js';
import type { GraphBuilder } from './onnx/graph-builder.js';
import { refMatMul, type RefTensor } from './reference/tensor.js';

export interface SwigluWeights {
  readonly gate: LinearWeights;
  readonly up: LinearWeights;
  readonly down: LinearWeights;
}

export type GateActivation = 'silu' | 'gelu_tanh';

/** Initializers: `gate_proj.weight`, `up_proj.weight`, `down_proj.weight` in the current scope. */
export function gatedMlp(g: GraphBuilder, x: string, w: SwigluWeights, precision: WeightPrecision, activation: GateActivation = 'silu'): string {
  const gate = linear(g, x, 'gate_proj', w.gate, precision);
  const up = linear(g, x, 'up_proj', w.up, precision);
  const activated = activation === 'silu' ? g.op1('Mul', [gate, g.op1('Sigmoid', [gate])]) : geluTanh(g, gate);
  return linear(g, g.op1('Mul', [activated, up]), 'down_proj', w.down, precision);
}

export const swigluMlp = (g: GraphBuilder, x: string, w: SwigluWeights, precision: WeightPrecision): string => gatedMlp(g, x, w, precision, 'silu');

/** 0.5·z·(1 + tanh(√(2/π)·(z + 0.044715·z³))), in standard ops (opset 17 has no Gelu). */
function geluTanh(g: GraphBuilder, z: string): string {
  const cubic = g.op1('Mul', [g.op1('Mul', [g.op1('Mul', [z, z]), z]), g.floats(0.044715)]);
  const inner = g.op1('Mul', [g.op1('Add', [z, cubic]), g.floats(Math.sqrt(2 / Math.PI))]);
  return g.op1('Mul', [g.op1('Mul', [z, g.floats(0.5)]), g.op1('Add', [g.op1('Tanh', [inner]), g.floats(1)])]);
}

export function swigluMlpReference(x: RefTensor, w: SwigluWeights): RefTensor {
  const asRef = (l: LinearWeights): RefTensor => ({ dims: [l.inFeatures, l.outFeatures], data: Float64Array.from(l.weight) });
  const gate = refMatMul(x, asRef(w.gate));
  const up = refMatMul(x, asRef(w.up));
  const hidden = gate.data.map((z, i) => (z / (1 + Math.exp(-z))) * up.data[i]!);
  return refMatMul({ dims: gate.dims, data: hidden }, asRef(w.down));
}
