// Rotary position embedding, Hugging Face "rotate half" convention:
//   x' = x·cos(pθ) + rotate_half(x)·sin(pθ),  rotate_half([x1, x2]) = [-x2, x1],
// with θ_i = theta^(-2i/headDim), dimension i paired with i + headDim/2.
// The rotation is ORT's RotaryEmbedding contrib op: one node per q and per k of a layer where the
// standard-op form (Split, Neg, Concat, two Mul, Add) took six, which at one decode stream is
// dispatch, not arithmetic (kernels/README.md).
// cos/sin are computed in float32 from position_ids even in fp16 graphs: fp16 cannot represent
// p·θ accurately past a few hundred positions.

import { type GraphBuilder, MS_DOMAIN } from './onnx/graph-builder.js';
import type { RefTensor } from './reference/tensor.js';

/**
 * One call's RoPE inputs for ORT's RotaryEmbedding (com.microsoft): a cos/sin row per position of
 * the call rather than a [max_position, D/2] table, so the graph holds no table sized by the
 * model's context (per segment file, that would be 8 × 2 × 131,072 × 64 floats for a Llama 3.1),
 * and no position can index past its end: `rows` numbers the call's positions 0 .. B·S−1.
 */
export interface RotaryTables {
  /** [B·S, D/2] in the graph's float type. */
  readonly cos: string;
  readonly sin: string;
  /** [B, S] int64: row r of the tables for position (b, s), shaped as the op's position_ids. */
  readonly rows: string;
  /** Dimensions of a head that rotate (2 × the tables' width): the first rotaryDim, the rest pass through (partial rotary, Phi-3 / Phi-4). */
  readonly rotaryDim: number;
  readonly headDim: number;
}

export function inverseFrequencies(headDim: number, theta: number): number[] {
  return Array.from({ length: headDim / 2 }, (_, i) => 1 / theta ** ((2 * i) / headDim));
}

/**
 * cos/sin rows for `positionIds` [B, S] int64; computed once a call, shared by the layers with the
 * same RoPE. `inverse` overrides θ_i for checkpoints whose config rescales RoPE (e.g. Llama 3's
 * rope_scaling), and is shorter than headDim / 2 where only part of a head rotates;
 * `attentionFactor` multiplies cos and sin (YaRN, LongRoPE).
 */
export function rotaryTables(g: GraphBuilder, positionIds: string, headDim: number, theta: number, inverse: readonly number[] = inverseFrequencies(headDim, theta), attentionFactor = 1): RotaryTables {
  const positions = g.op1('Cast', [g.op1('Reshape', [positionIds, g.ints([-1, 1])])], { to: 1 }); // [B·S, 1] float32
  const angles = g.op1('Mul', [positions, g.floats(inverse, 'float32')]); // [B·S, R/2]
  const scaled = (x: string): string => (attentionFactor === 1 ? x : g.op1('Mul', [x, g.floats(attentionFactor, 'float32')]));
  const toGraphType = (x: string): string => (g.floatType === 'float16' ? g.op1('Cast', [x], { to: 10 }) : x);
  const shape = g.op1('Shape', [positionIds]);
  const rows = g.op1('Reshape', [g.op1('Range', [g.ints(0), g.op1('ReduceProd', [shape], { keepdims: 0 }), g.ints(1)]), shape]);
  const cos = toGraphType(scaled(g.op1('Cos', [angles])));
  const sin = toGraphType(scaled(g.op1('Sin', [angles])));
  return { cos, sin, rows, rotaryDim: 2 * inverse.length, headDim };
}

/** Applies the rotation to `x` [batch, heads, seq, headDim] (the tables' [B, S] positions). */
export function applyRotary(g: GraphBuilder, x: string, tables: RotaryTables): string {
  // interleaved 0: Hugging Face's rotate_half pairs (i, i + R/2), not adjacent lanes.
  const rotate = (part: string): string => g.op1('RotaryEmbedding', [part, tables.rows, tables.cos, tables.sin], { interleaved: 0 }, { domain: MS_DOMAIN });
  if (tables.rotaryDim === tables.headDim) return rotate(x);
  // Partial rotary: the first rotaryDim dimensions rotate (as a head of that size), the rest pass.
  const [rotated, passed] = g.op('Split', [x, g.ints([tables.rotaryDim, tables.headDim - tables.rotaryDim])], { axis: -1 }, { outputs: 2 }) as [string, string];
  return g.op1('Concat', [rotate(rotated), passed], { axis: -1 });
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
