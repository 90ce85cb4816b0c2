// Rotary position embedding, Hugging Face "rotate half" convention:
//   x' = x·cos(pθ) + rotate_half(x)·sin(pθ),  rotate_half([x1, x2]) = [-x2, x1],
// with θ_i = theta^(-2i/headDim) and the frequency vector repeated twice ([f, f]).
// cos/sin are computed in float32 from position_ids even in fp16 graphs: fp16 cannot represent
// p·θ accurately past a few hundred positions.

import type { GraphBuilder } from './onnx/graph-builder.js';
import type { RefTensor } from './reference/tensor.js';

export interface RotaryTables {
  /** [batch, 1, seq, headDim] in the graph's float type, broadcastable over heads. */
  readonly cos: string;
  readonly sin: string;
}

export function inverseFrequencies(headDim: number, theta: number): number[] {
  return Array.from({ length: headDim / 2 }, (_, i) => 1 / theta ** ((2 * i) / headDim));
}

/**
 * cos/sin tables for `positionIds` [batch, seq] int64; computed once, shared by all layers.
 * `inverse` overrides θ_i for checkpoints whose config rescales RoPE (e.g. Llama 3's rope_scaling).
 */
export function rotaryTables(g: GraphBuilder, positionIds: string, headDim: number, theta: number, inverse: readonly number[] = inverseFrequencies(headDim, theta)): RotaryTables {
  const positions = g.op1('Cast', [g.op1('Unsqueeze', [positionIds, g.ints([-1])])], { to: 1 }); // [B, S, 1] float32
  const freqs = g.op1('Mul', [positions, g.floats(inverse, 'float32')]); // [B, S, D/2]
  const angles = g.op1('Unsqueeze', [g.op1('Concat', [freqs, freqs], { axis: -1 }), g.ints([1])]); // [B, 1, S, D]
  const toGraphType = (x: string): string => (g.floatType === 'float16' ? g.op1('Cast', [x], { to: 10 }) : x);
  return { cos: toGraphType(g.op1('Cos', [angles])), sin: toGraphType(g.op1('Sin', [angles])) };
}

/** Applies the rotation to `x` [batch, heads, seq, headDim]. */
export function applyRotary(g: GraphBuilder, x: string, tables: RotaryTables, headDim: number): string {
  const half = headDim / 2;
  const [x1, x2] = g.op('Split', [x, g.ints([half, half])], { axis: -1 }, { outputs: 2 }) as [string, string];
  const rotated = g.op1('Concat', [g.op1('Neg', [x2]), x1], { axis: -1 });
  return g.op1('Add', [g.op1('Mul', [x, tables.cos]), g.op1('Mul', [rotated, tables.sin])]);
}

/** Float64 reference: x [B, H, S, D], positions [B, S]. */
export function rotaryReference(x: RefTensor, positions: readonly number[], theta: number): RefTensor {
  const [batch, heads, seq, dim] = x.dims as [number, number, number, number];
  const half = dim / 2;
  const invFreq = inverseFrequencies(dim, theta);
  const out = new Float64Array(x.data.length);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < heads; h++) {
      for (let s = 0; s < seq; s++) {
        const base = ((b * heads + h) * seq + s) * dim;
        const p = positions[b * seq + s]!;
        for (let i = 0; i < half; i++) {
          // Same float32 rounding of the angle as the graph, so long positions compare fairly.
          const angle = Math.fround(Math.fround(p) * Math.fround(invFreq[i]!));
          const [c, sn] = [Math.cos(angle), Math.sin(angle)];
          const [a, bb] = [x.data[base + i]!, x.data[base + half + i]!];
          out[base + i] = a * c - bb * sn;
          out[base + half + i] = bb * c + a * sn;
        }
      }
    }
  }
  return { dims: x.dims, data: out };
}
