// Conv + BatchNorm (inference mode) + ReLU, and the ResNet basic residual block built from it.
// fp32/fp16 keep Conv and BatchNormalization as separate nodes with torchvision's initializer
// names (ORT fuses them at load time); int8 folds the BatchNorm into the convolution first,
// because quantizing the folded weights is what keeps the per-channel scales honest.

import type { Precision } from './linear.js';
import type { GraphBuilder } from './onnx/graph-builder.js';
import { float } from './onnx/graph-builder.js';
import { DEFAULT_INT8_CONV, foldBatchNorm, quantizedConv, type ActivationRange, type Int8ConvFormulation } from './quantized-conv.js';
import type { RefTensor } from './reference/tensor.js';

/** PyTorch's BatchNorm2d default. */
export const BN_EPSILON = 1e-5;

/** Per-channel BatchNorm parameters and running statistics (each of length channels). */
export interface BatchNormParams {
  readonly gamma: Float32Array;
  readonly beta: Float32Array;
  readonly runningMean: Float32Array;
  readonly runningVar: Float32Array;
}

/** A square convolution without bias followed by BatchNorm; padding is (kernel - 1) / 2. */
export interface ConvBnLayer {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly kernel: number;
  readonly stride: number;
  /** [outChannels, inChannels, kernel, kernel] row-major (ONNX Conv's W layout). */
  readonly weight: Float32Array;
  readonly bn: BatchNormParams;
  /** Calibrated ranges of the conv input and the BatchNorm output; int8 needs them. */
  readonly inputRange?: ActivationRange;
  readonly outputRange?: ActivationRange;
}

export interface BasicBlockWeights {
  readonly conv1: ConvBnLayer;
  readonly conv2: ConvBnLayer;
  /** 1×1 stride-2 projection where the block changes shape; identity otherwise. */
  readonly downsample?: ConvBnLayer;
}

export function convPadding(kernel: number): number {
  return Math.floor((kernel - 1) / 2);
}

/** Names follow torchvision: `{convName}.weight`, `{bnName}.weight|bias|running_mean|running_var`. */
export interface ConvBnNames {
  readonly conv: string;
  readonly bn: string;
}

export function convBn(g: GraphBuilder, x: string, names: ConvBnNames, layer: ConvBnLayer, precision: Precision, relu: boolean, int8: Int8ConvFormulation = DEFAULT_INT8_CONV): string {
  if (precision === 'int8') return quantizedConv(g, x, names.conv, foldBatchNorm(layer, BN_EPSILON), relu, int8);
  const { inChannels, outChannels, kernel, stride, bn } = layer;
  const pad = convPadding(kernel);
  const weight = g.weight(`${names.conv}.weight`, [outChannels, inChannels, kernel, kernel], layer.weight);
  const conv = g.op1('Conv', [x, weight], { kernel_shape: [kernel, kernel], strides: [stride, stride], pads: [pad, pad, pad, pad] }, { name: names.conv });
  const bnInputs = [
    g.weight(`${names.bn}.weight`, [outChannels], bn.gamma),
    g.weight(`${names.bn}.bias`, [outChannels], bn.beta),
    g.weight(`${names.bn}.running_mean`, [outChannels], bn.runningMean),
    g.weight(`${names.bn}.running_var`, [outChannels], bn.runningVar),
  ];
  const y = g.op1('BatchNormalization', [conv, ...bnInputs], { epsilon: float(BN_EPSILON) }, { name: names.bn });
  return relu ? g.op1('Relu', [y]) : y;
}

/** relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), initializers named inside the caller's scope. */
export function basicBlock(g: GraphBuilder, x: string, block: BasicBlockWeights, precision: Precision, int8: Int8ConvFormulation = DEFAULT_INT8_CONV): string {
  const h = convBn(g, x, { conv: 'conv1', bn: 'bn1' }, block.conv1, precision, true, int8);
  const y = convBn(g, h, { conv: 'conv2', bn: 'bn2' }, block.conv2, precision, false, int8);
  const projection = block.downsample;
  const shortcut = projection ? convBn(g, x, { conv: 'downsample.0', bn: 'downsample.1' }, projection, precision, false, int8) : x;
  return g.op1('Relu', [g.op1('Add', [y, shortcut])]);
}

// ---------------------------------------------------------------------------------------------
// Float64 references. Also used by the model builders to calibrate BatchNorm statistics, so the
// convolution is written for speed (loop order keeps the innermost loop contiguous).

/** Output spatial size of a convolution or pooling window. */
export function outputSize(input: number, kernel: number, stride: number, pad: number): number {
  return Math.floor((input + 2 * pad - kernel) / stride) + 1;
}

/** NCHW convolution with zero padding; `weight` is [outChannels, C, k, k]; optional per-channel bias. */
export function conv2dReference(x: RefTensor, weight: ArrayLike<number>, outChannels: number, kernel: number, stride: number, bias?: ArrayLike<number>): RefTensor {
  const [n, c, h, w] = x.dims as [number, number, number, number];
  const pad = convPadding(kernel);
  const oh = outputSize(h, kernel, stride, pad);
  const ow = outputSize(w, kernel, stride, pad);
  const out = new Float64Array(n * outChannels * oh * ow);
  for (let b = 0; b < n; b++) {
    for (let o = 0; o < outChannels; o++) {
      const plane = out.subarray((b * outChannels + o) * oh * ow, (b * outChannels + o + 1) * oh * ow);
      if (bias) plane.fill(bias[o]!);
      for (let i = 0; i < c; i++) {
        const input = x.data.subarray((b * c + i) * h * w, (b * c + i + 1) * h * w);
        for (let kh = 0; kh < kernel; kh++) {
          for (let kw = 0; kw < kernel; kw++) {
            const wv = weight[((o * c + i) * kernel + kh) * kernel + kw]!;
            accumulateTap(plane, input, wv, { h, w, oh, ow, stride, dy: kh - pad, dx: kw - pad });
          }
        }
      }
    }
  }
  return { dims: [n, outChannels, oh, ow], data: out };
}

interface Tap {
  h: number;
  w: number;
  oh: number;
  ow: number;
  stride: number;
  dy: number;
  dx: number;
}

/** plane[y, x] += wv · input[y·s + dy, x·s + dx] wherever that input position exists. */
function accumulateTap(plane: Float64Array, input: Float64Array, wv: number, t: Tap): void {
  if (wv === 0) return;
  const { h, w, oh, ow, stride, dy, dx } = t;
  const x0 = Math.max(0, Math.ceil(-dx / stride));
  const x1 = Math.min(ow, Math.floor((w - 1 - dx) / stride) + 1);
  for (let y = 0; y < oh; y++) {
    const iy = y * stride + dy;
    if (iy < 0 || iy >= h) continue;
    const rowOut = y * ow;
    let i = iy * w + dx + x0 * stride;
    for (let xo = rowOut + x0, end = rowOut + x1; xo < end; xo++, i += stride) plane[xo]! += wv * input[i]!;
  }
}

/** Inference-mode BatchNorm over axis 1 of an NCHW tensor. */
export function batchNormReference(x: RefTensor, bn: BatchNormParams, epsilon = BN_EPSILON): RefTensor {
  const [n, c] = x.dims as [number, number];
  const plane = x.data.length / (n * c);
  const out = new Float64Array(x.data.length);
  for (let b = 0; b < n; b++) {
    for (let ch = 0; ch < c; ch++) {
      const scale = bn.gamma[ch]! / Math.sqrt(bn.runningVar[ch]! + epsilon);
      const shift = bn.beta[ch]! - bn.runningMean[ch]! * scale;
      const base = (b * c + ch) * plane;
      for (let i = 0; i < plane; i++) out[base + i] = x.data[base + i]! * scale + shift;
    }
  }
  return { dims: x.dims, data: out };
}

export function reluReference(x: RefTensor): RefTensor {
  return { dims: x.dims, data: x.data.map((v) => (v > 0 ? v : 0)) };
}

export function addReference(a: RefTensor, b: RefTensor): RefTensor {
  return { dims: a.dims, data: a.data.map((v, i) => v + b.data[i]!) };
}

export function convBnReference(x: RefTensor, layer: ConvBnLayer, relu: boolean): RefTensor {
  const y = batchNormReference(conv2dReference(x, layer.weight, layer.outChannels, layer.kernel, layer.stride), layer.bn);
  return relu ? reluReference(y) : y;
}

export function basicBlockReference(x: RefTensor, block: BasicBlockWeights): RefTensor {
  const y = convBnReference(convBnReference(x, block.conv1, true), block.conv2, false);
  const shortcut = block.downsample ? convBnReference(x, block.downsample, false) : x;
  return reluReference(addReference(y, shortcut));
}
