// Weight-quantized MatMul for the INT8 variants: int8 weights with one fp32 scale per output
// column (symmetric, zero point 0). This first formulation dequantizes in-graph
// (DequantizeLinear → MatMul); the measured choice of formulation is recorded in kernels/README.md.

import type { GraphBuilder } from './onnx/graph-builder.js';
import type { RefTensor } from './reference/tensor.js';

export interface QuantizedWeight {
  /** [inFeatures, outFeatures] row-major int8. */
  readonly values: Int8Array;
  /** One scale per output column. */
  readonly scales: Float32Array;
  readonly inFeatures: number;
  readonly outFeatures: number;
}

/** Symmetric per-output-column int8 quantization of a [in, out] row-major weight. */
export function quantizePerColumn(weight: Float32Array, inFeatures: number, outFeatures: number): QuantizedWeight {
  const scales = new Float32Array(outFeatures);
  for (let i = 0; i < inFeatures; i++) {
    for (let j = 0; j < outFeatures; j++) scales[j] = Math.max(scales[j]!, Math.abs(weight[i * outFeatures + j]!));
  }
  for (let j = 0; j < outFeatures; j++) scales[j] = scales[j]! > 0 ? scales[j]! / 127 : 1;
  const values = new Int8Array(weight.length);
  for (let i = 0; i < inFeatures; i++) {
    for (let j = 0; j < outFeatures; j++) {
      values[i * outFeatures + j] = Math.max(-127, Math.min(127, Math.round(weight[i * outFeatures + j]! / scales[j]!)));
    }
  }
  return { values, scales, inFeatures, outFeatures };
}

/** x · dequantize(W): the graph side. `name` scopes the initializers (`{name}.weight_quantized`, …). */
export function quantizedMatMul(g: GraphBuilder, x: string, name: string, w: QuantizedWeight): string {
  const values = g.initializer(`${name}.weight_quantized`, { dtype: 'int8', dims: [w.inFeatures, w.outFeatures], data: w.values });
  const scales = g.initializer(`${name}.weight_scale`, { dtype: 'float32', dims: [w.outFeatures], data: w.scales });
  const zeroPoints = g.initializer(`${name}.weight_zero_point`, { dtype: 'int8', dims: [w.outFeatures], data: new Int8Array(w.outFeatures) });
  const weight = g.op1('DequantizeLinear', [values, scales, zeroPoints], { axis: 1 });
  return g.op1('MatMul', [x, weight]);
}

/** Float64 reference: x · (values · scale), the exact math the quantized graph approximates. */
export function quantizedMatMulReference(x: RefTensor, w: QuantizedWeight): RefTensor {
  const rows = x.data.length / w.inFeatures;
  const out = new Float64Array(rows * w.outFeatures);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < w.inFeatures; i++) {
      const xv = x.data[r * w.inFeatures + i]!;
      for (let j = 0; j < w.outFeatures; j++) out[r * w.outFeatures + j]! += xv * w.values[i * w.outFeatures + j]! * w.scales[j]!;
    }
  }
  return { dims: [...x.dims.slice(0, -1), w.outFeatures], data: out };
}
