// Deterministic random weights for the ResNet-style classifier, with data-dependent BatchNorm
// statistics. A random CNN with made-up running stats either blows up or, worse, produces the
// same logits for every image: every channel carries an input-independent offset that survives
// global average pooling. So the builder pushes a few synthetic images through the float64
// reference and sets each BatchNorm's running mean/var to what that layer actually sees, records
// activation ranges for static int8, and centres the classifier on the mean pooled feature.
// Everything is float64 +, ×, ÷ and √, so the bytes are the same on every machine.

import { addReference, basicBlockReference, batchNormReference, conv2dReference, reluReference, type BasicBlockWeights, type ConvBnLayer } from '../../kernels/conv-block.js';
import { globalAveragePoolReference } from '../../kernels/global-average-pool.js';
import type { LinearWeights } from '../../kernels/linear.js';
import { SeededRandom, seedFor } from '../../kernels/onnx/random.js';
import type { ActivationRange } from '../../kernels/quantized-conv.js';
import { refMatMul, refTensor, type RefTensor } from '../../kernels/reference/tensor.js';
import type { ResnetConfig } from './config.js';
import { normalizedPixelRange, syntheticImages } from './images.js';
import { maxPoolReference, stemReference } from './stem.js';

export interface ResnetWeights {
  readonly stem: ConvBnLayer;
  /** stages[s][b] is torchvision's `layer{s+1}.{b}`. */
  readonly stages: readonly (readonly BasicBlockWeights[])[];
  readonly fc: LinearWeights;
}

/** Spread of the logits over the calibration images: wide enough that softmax is not flat. */
const LOGIT_STD = 2;

type Stream = (name: string) => SeededRandom;

interface Calibrated {
  readonly layer: ConvBnLayer;
  /** The layer's output on the calibration images (after ReLU when it has one). */
  readonly y: RefTensor;
}

/** He-initialised conv; γ and β near 1 and 0 (not exactly, so a dropped BN input shows in tests). */
function calibrateConv(stream: Stream, names: { conv: string; bn: string }, x: RefTensor, shape: { outChannels: number; kernel: number; stride: number }, relu: boolean): Calibrated {
  const { outChannels, kernel, stride } = shape;
  const inChannels = x.dims[1]!;
  const fanIn = inChannels * kernel * kernel;
  const weight = stream(`${names.conv}.weight`).uniformWithStd(outChannels * fanIn, Math.sqrt(2 / fanIn));
  const gamma = stream(`${names.bn}.weight`)
    .uniformWithStd(outChannels, 0.1)
    .map((v) => 1 + v);
  const beta = stream(`${names.bn}.bias`).uniformWithStd(outChannels, 0.1);
  const conv = conv2dReference(x, weight, outChannels, kernel, stride);
  const { mean, variance } = channelMoments(conv);
  const bn = { gamma, beta, runningMean: Float32Array.from(mean), runningVar: Float32Array.from(variance) };
  const normalized = batchNormReference(conv, bn);
  const layer: ConvBnLayer = { inChannels, outChannels, kernel, stride, weight, bn, inputRange: rangeOf(x), outputRange: rangeOf(normalized) };
  return { layer, y: relu ? reluReference(normalized) : normalized };
}

/** Per-channel mean and (population) variance over batch and space of an NCHW tensor. */
function channelMoments(x: RefTensor): { mean: Float64Array; variance: Float64Array } {
  const [n, c] = x.dims as [number, number];
  const plane = x.data.length / (n * c);
  const mean = new Float64Array(c);
  const variance = new Float64Array(c);
  for (let ch = 0; ch < c; ch++) {
    let sum = 0;
    for (let b = 0; b < n; b++) for (let i = 0; i < plane; i++) sum += x.data[(b * c + ch) * plane + i]!;
    const m = sum / (n * plane);
    let squares = 0;
    for (let b = 0; b < n; b++) for (let i = 0; i < plane; i++) squares += (x.data[(b * c + ch) * plane + i]! - m) ** 2;
    mean[ch] = m;
    variance[ch] = squares / (n * plane);
  }
  return { mean, variance };
}

// Calibration sees only a few images; on new ones the deep layers reach up to ≈1.5× the largest
// value it saw. Clipping those (static int8) costs far more than the one bit of resolution that
// a 2× wider range gives up: measured max logit error 0.15 at 1.25×, 0.05 at 1.5×, 0.03 at 2×.
const RANGE_MARGIN = 2;

function rangeOf(x: RefTensor): ActivationRange {
  let [min, max] = [Infinity, -Infinity];
  for (const v of x.data) [min, max] = [Math.min(min, v), Math.max(max, v)];
  return { min: min * RANGE_MARGIN, max: max * RANGE_MARGIN };
}

function calibrateBlock(stream: Stream, name: string, x: RefTensor, outChannels: number, stride: number): { block: BasicBlockWeights; y: RefTensor } {
  const names = (conv: string, bn: string) => ({ conv: `${name}.${conv}`, bn: `${name}.${bn}` });
  const conv1 = calibrateConv(stream, names('conv1', 'bn1'), x, { outChannels, kernel: 3, stride }, true);
  const conv2 = calibrateConv(stream, names('conv2', 'bn2'), conv1.y, { outChannels, kernel: 3, stride: 1 }, false);
  const projected = stride !== 1 || x.dims[1] !== outChannels;
  const downsample = projected ? calibrateConv(stream, names('downsample.0', 'downsample.1'), x, { outChannels, kernel: 1, stride }, false) : undefined;
  const block: BasicBlockWeights = { conv1: conv1.layer, conv2: conv2.layer, ...(downsample ? { downsample: downsample.layer } : {}) };
  return { block, y: reluReference(addReference(conv2.y, downsample ? downsample.y : x)) };
}

/** Random classifier rescaled to LOGIT_STD and biased so the mean pooled feature maps to zero logits. */
function calibrateClassifier(stream: Stream, features: RefTensor, numClasses: number): LinearWeights {
  const [n, width] = features.dims as [number, number];
  const raw = stream('fc.weight').uniformWithStd(width * numClasses, 1 / Math.sqrt(width));
  const meanFeature = new Float64Array(width);
  for (let i = 0; i < n * width; i++) meanFeature[i % width]! += features.data[i]! / n;
  const centred = refTensor(
    features.dims,
    features.data.map((v, i) => v - meanFeature[i % width]!),
  );
  const logits = refMatMul(centred, refTensor([width, numClasses], raw)).data;
  const std = Math.sqrt(logits.reduce((sum, v) => sum + v * v, 0) / logits.length);
  const weight = raw.map((v) => (v * LOGIT_STD) / std);
  const offset = refMatMul(refTensor([1, width], meanFeature), refTensor([width, numClasses], weight)).data;
  return { inFeatures: width, outFeatures: numClasses, weight, bias: Float32Array.from(offset, (v) => -v) };
}

export function initResnetWeights(c: ResnetConfig, seed: number): ResnetWeights {
  const stream: Stream = (name) => new SeededRandom(seedFor(seed, name));
  const images = syntheticImages(seedFor(seed, 'calibration'), c.calibrationImages, c.imageSize);
  const input = refTensor([c.calibrationImages, 3, c.imageSize, c.imageSize], images);
  const stemConv = calibrateConv(stream, { conv: 'conv1', bn: 'bn1' }, input, { outChannels: c.stemWidth, kernel: 7, stride: 2 }, true);
  // Whatever image arrives, its normalized pixels lie in this range; int8 need not guess it.
  const stem = { ...stemConv.layer, inputRange: normalizedPixelRange() };
  let x = maxPoolReference(stemConv.y);
  const stages = c.widths.map((width, s) =>
    Array.from({ length: c.blocksPerStage[s]! }, (_, b) => {
      const result = calibrateBlock(stream, `layer${s + 1}.${b}`, x, width, s > 0 && b === 0 ? 2 : 1);
      x = result.y;
      return result.block;
    }),
  );
  return { stem, stages, fc: calibrateClassifier(stream, globalAveragePoolReference(x), c.numClasses) };
}

/** Float64 forward pass of the fp32 model: [n, 3, H, W] images → [n, classes] logits. */
export function resnetReference(weights: ResnetWeights, images: RefTensor): RefTensor {
  let x = stemReference(images, weights.stem);
  for (const stage of weights.stages) for (const block of stage) x = basicBlockReference(x, block);
  const logits = refMatMul(globalAveragePoolReference(x), refTensor([weights.fc.inFeatures, weights.fc.outFeatures], weights.fc.weight));
  const bias = weights.fc.bias!;
  return { dims: logits.dims, data: logits.data.map((v, i) => v + bias[i % bias.length]!) };
}
