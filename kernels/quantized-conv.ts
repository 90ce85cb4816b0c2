// INT8 convolutions for the CNN variants. The BatchNorm is folded into the weights first, then
// the weights are quantized per output channel (symmetric). Three ONNX Runtime CPU formulations
// were measured (models/resnet/README.md); the default is the fastest, the others stay selectable
// so the measurement can be repeated.

import type { GraphBuilder } from './onnx/graph-builder.js';
import type { BatchNormParams } from './conv-block.js';

/** The smallest and largest value calibration saw in a tensor. */
export interface ActivationRange {
  readonly min: number;
  readonly max: number;
}

/**
 * - `qdq-weight`: int8 weights, DequantizeLinear → float Conv (activations stay float);
 * - `conv-integer`: DynamicQuantizeLinear on the input → ConvInteger → rescale in float;
 * - `qlinear`: static activation scales from calibration → QLinearConv (uint8 × int8);
 * - `qdq`: the same static scales written as QuantizeLinear/DequantizeLinear around a float Conv.
 */
export type Int8ConvFormulation = 'qdq-weight' | 'conv-integer' | 'qlinear' | 'qdq';

export const DEFAULT_INT8_CONV: Int8ConvFormulation = 'qlinear';

/** A convolution with bias, BatchNorm already folded in. */
export interface FoldedConv {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly kernel: number;
  readonly stride: number;
  /** [outChannels, inChannels, kernel, kernel] */
  readonly weight: Float32Array;
  readonly bias: Float32Array;
  readonly inputRange?: ActivationRange;
  readonly outputRange?: ActivationRange;
}

interface FoldableLayer extends Omit<FoldedConv, 'bias'> {
  readonly bn: BatchNormParams;
}

/** conv → BN equals conv with weights scaled by γ/√(var+ε) per channel and bias β − mean·that. */
export function foldBatchNorm(layer: FoldableLayer, epsilon: number): FoldedConv {
  const { outChannels, bn } = layer;
  const perChannel = layer.weight.length / outChannels;
  const weight = new Float32Array(layer.weight.length);
  const bias = new Float32Array(outChannels);
  for (let o = 0; o < outChannels; o++) {
    const scale = bn.gamma[o]! / Math.sqrt(bn.runningVar[o]! + epsilon);
    for (let i = 0; i < perChannel; i++) weight[o * perChannel + i] = layer.weight[o * perChannel + i]! * scale;
    bias[o] = bn.beta[o]! - bn.runningMean[o]! * scale;
  }
  return { ...layer, weight, bias };
}

/**
 * Weights use 7 of int8's bits (ORT's quantizer calls this reduce_range). On x86 CPUs without
 * VNNI, ORT's uint8 × int8 kernels add pairs of products in 16 bits (VPMADDUBSW), which saturate
 * once 2 · 255 · |w| passes 32,767: with full-range weights the int8 CNN's error grew tenfold on an
 * AVX2-only machine. |w| ≤ 63 never saturates, at a cost of one bit of weight precision.
 */
export const WEIGHT_LEVELS = 63;

/** Symmetric int8 quantization with one scale per output channel (row of `perRow` values). */
export function quantizePerRow(weight: Float32Array, rows: number, levels = WEIGHT_LEVELS): { values: Int8Array; scales: Float32Array } {
  const perRow = weight.length / rows;
  const scales = new Float32Array(rows);
  const values = new Int8Array(weight.length);
  for (let r = 0; r < rows; r++) {
    let maxAbs = 0;
    for (let i = 0; i < perRow; i++) maxAbs = Math.max(maxAbs, Math.abs(weight[r * perRow + i]!));
    const scale = maxAbs > 0 ? maxAbs / levels : 1;
    scales[r] = scale;
    for (let i = 0; i < perRow; i++) values[r * perRow + i] = Math.max(-levels, Math.min(levels, Math.round(weight[r * perRow + i]! / scales[r]!)));
  }
  return { values, scales };
}

/** Asymmetric uint8 parameters covering [min, max] ∪ {0}; a ReLU output gets zero point 0. */
export function uint8Params(range: ActivationRange): { scale: number; zeroPoint: number } {
  const min = Math.min(range.min, 0);
  const max = Math.max(range.max, 0);
  const scale = max > min ? Math.fround((max - min) / 255) : 1;
  return { scale, zeroPoint: Math.max(0, Math.min(255, Math.round(-min / scale))) };
}

export function quantizedConv(g: GraphBuilder, x: string, name: string, conv: FoldedConv, relu: boolean, formulation = DEFAULT_INT8_CONV): string {
  const { values, scales } = quantizePerRow(conv.weight, conv.outChannels);
  const quantized = { ...conv, values, scales };
  if (formulation === 'qlinear') return qlinearConv(g, x, name, quantized, relu);
  if (formulation === 'qdq') return qdqConv(g, x, name, quantized, relu);
  const y = formulation === 'conv-integer' ? convInteger(g, x, name, quantized) : dequantizedConv(g, x, name, quantized);
  return relu ? g.op1('Relu', [y]) : y;
}

interface QuantizedConv extends FoldedConv {
  readonly values: Int8Array;
  readonly scales: Float32Array;
}

function convAttrs(c: FoldedConv) {
  const pad = Math.floor((c.kernel - 1) / 2);
  return { kernel_shape: [c.kernel, c.kernel], strides: [c.stride, c.stride], pads: [pad, pad, pad, pad] };
}

function weightInitializer(g: GraphBuilder, name: string, c: QuantizedConv): string {
  return g.initializer(`${name}.weight_quantized`, { dtype: 'int8', dims: [c.outChannels, c.inChannels, c.kernel, c.kernel], data: c.values });
}

function dequantizedConv(g: GraphBuilder, x: string, name: string, c: QuantizedConv): string {
  const weight = g.op1('DequantizeLinear', weightParams(g, name, c), { axis: 0 });
  const bias = g.initializer(`${name}.bias`, { dtype: 'float32', dims: [c.outChannels], data: c.bias });
  return g.op1('Conv', [x, weight, bias], convAttrs(c), { name });
}

function convInteger(g: GraphBuilder, x: string, name: string, c: QuantizedConv): string {
  const [xq, xScale, xZero] = g.op('DynamicQuantizeLinear', [x], {}, { outputs: 3 });
  const acc = g.op1('ConvInteger', [xq!, weightInitializer(g, name, c), xZero!], convAttrs(c), { name });
  const scales = g.initializer(`${name}.weight_scale`, { dtype: 'float32', dims: [1, c.outChannels, 1, 1], data: c.scales });
  const bias = g.initializer(`${name}.bias`, { dtype: 'float32', dims: [1, c.outChannels, 1, 1], data: c.bias });
  const scaled = g.op1('Mul', [g.op1('Cast', [acc], { to: 1 }), g.op1('Mul', [scales, xScale!])]);
  return g.op1('Add', [scaled, bias]);
}

interface StaticParams {
  readonly inputScale: number;
  readonly xs: string;
  readonly xz: string;
  readonly ys: string;
  readonly yz: string;
  /** The bias in int32 at scale inputScale · weightScale[o], as QLinearConv wants it. */
  readonly bias: Int32Array;
  readonly biasScales: Float32Array;
}

/** Static uint8 parameters of the conv's input and output, from the calibrated ranges. */
function staticParams(g: GraphBuilder, name: string, c: QuantizedConv, relu: boolean): StaticParams {
  if (!c.inputRange || !c.outputRange) throw new Error(`${name}: static int8 needs calibrated activation ranges`);
  const input = uint8Params(c.inputRange);
  // Clamping to the uint8 grid with zero point 0 is the ReLU, so no separate node.
  const output = uint8Params(relu ? { min: 0, max: c.outputRange.max } : c.outputRange);
  const scalar = (suffix: string, value: number) => g.initializer(`${name}.${suffix}`, { dtype: 'float32', dims: [], data: Float32Array.of(value) });
  const zero = (suffix: string, value: number) => g.initializer(`${name}.${suffix}`, { dtype: 'uint8', dims: [], data: Uint8Array.of(value) });
  const biasScales = Float32Array.from(c.scales, (s) => input.scale * s);
  return {
    inputScale: input.scale,
    xs: scalar('input_scale', input.scale),
    xz: zero('input_zero_point', input.zeroPoint),
    ys: scalar('output_scale', output.scale),
    yz: zero('output_zero_point', output.zeroPoint),
    bias: Int32Array.from(c.bias, (b, o) => Math.round(b / biasScales[o]!)),
    biasScales,
  };
}

function weightParams(g: GraphBuilder, name: string, c: QuantizedConv): [string, string, string] {
  return [
    weightInitializer(g, name, c),
    g.initializer(`${name}.weight_scale`, { dtype: 'float32', dims: [c.outChannels], data: c.scales }),
    g.initializer(`${name}.weight_zero_point`, { dtype: 'int8', dims: [c.outChannels], data: new Int8Array(c.outChannels) }),
  ];
}

function qlinearConv(g: GraphBuilder, x: string, name: string, c: QuantizedConv, relu: boolean): string {
  const p = staticParams(g, name, c, relu);
  const bias = g.initializer(`${name}.bias_quantized`, { dtype: 'int32', dims: [c.outChannels], data: p.bias });
  const inputs = [g.op1('QuantizeLinear', [x, p.xs, p.xz]), p.xs, p.xz, ...weightParams(g, name, c), p.ys, p.yz, bias];
  return g.op1('DequantizeLinear', [g.op1('QLinearConv', inputs, convAttrs(c), { name }), p.ys, p.yz]);
}

/** The QDQ format ORT's own quantizer writes; ORT rewrites it into QLinearConv at load time. */
function qdqConv(g: GraphBuilder, x: string, name: string, c: QuantizedConv, relu: boolean): string {
  const p = staticParams(g, name, c, relu);
  const xdq = g.op1('DequantizeLinear', [g.op1('QuantizeLinear', [x, p.xs, p.xz]), p.xs, p.xz]);
  const w = g.op1('DequantizeLinear', weightParams(g, name, c), { axis: 0 });
  const biasInputs = [
    g.initializer(`${name}.bias_quantized`, { dtype: 'int32', dims: [c.outChannels], data: p.bias }),
    g.initializer(`${name}.bias_scale`, { dtype: 'float32', dims: [c.outChannels], data: p.biasScales }),
    g.initializer(`${name}.bias_zero_point`, { dtype: 'int32', dims: [c.outChannels], data: new Int32Array(c.outChannels) }),
  ];
  let y = g.op1('Conv', [xdq, w, g.op1('DequantizeLinear', biasInputs, { axis: 0 })], convAttrs(c), { name });
  if (relu) y = g.op1('Relu', [y]);
  return g.op1('DequantizeLinear', [g.op1('QuantizeLinear', [y, p.ys, p.yz]), p.ys, p.yz]);
}
