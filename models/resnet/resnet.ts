// Public entry points of the ResNet-style classifier builder.

import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Precision } from '../../kernels/linear.js';
import type { EncodedMessage } from '../../kernels/onnx/protobuf-writer.js';
import type { Int8ConvFormulation } from '../../kernels/quantized-conv.js';
import { PRECISIONS, VARIANT_FILE, writeModel, type ModelSize } from '../common/model-files.js';
import { DEFAULT_RESNET_SEED, RESNET_CONFIGS } from './config.js';
import { buildResnetGraph } from './graph.js';
import { syntheticLabels } from './labels.js';
import { initResnetWeights, type ResnetWeights } from './weights.js';

export interface ResnetBuildOptions {
  readonly size: ModelSize;
  readonly precision: Precision;
  readonly seed?: number;
  /** Only for measuring the alternatives; the default is the measured fastest. */
  readonly int8Conv?: Int8ConvFormulation;
}

// Calibration is the slow part of a build (seconds at bench size); the three variants of one
// build share it.
let lastWeights: { key: string; weights: ResnetWeights } | undefined;

export function resnetWeights(size: ModelSize, seed = DEFAULT_RESNET_SEED): ResnetWeights {
  const key = `${size}:${seed}`;
  if (lastWeights?.key !== key) lastWeights = { key, weights: initResnetWeights(RESNET_CONFIGS[size], seed) };
  return lastWeights.weights;
}

export function buildResnet(options: ResnetBuildOptions): { model: EncodedMessage } {
  const weights = resnetWeights(options.size, options.seed);
  return { model: buildResnetGraph(RESNET_CONFIGS[options.size], weights, options.precision, options.int8Conv) };
}

/** Writes model.onnx, model_fp16.onnx, model_quantized.onnx and labels.txt; returns name → sha256. */
export async function writeResnetModel(dir: string, size: ModelSize, log: (line: string) => void = () => {}): Promise<Record<string, string>> {
  await mkdir(dir, { recursive: true });
  const files: Record<string, string> = {};
  const labels = `${syntheticLabels(RESNET_CONFIGS[size].numClasses).join('\n')}\n`;
  await writeFile(join(dir, 'labels.txt'), labels);
  files['labels.txt'] = createHash('sha256').update(labels).digest('hex');
  log(`resnet-${size}: calibrating weights`);
  resnetWeights(size);
  for (const precision of PRECISIONS) {
    const name = VARIANT_FILE[precision];
    log(`resnet-${size}: writing ${name}`);
    files[name] = await writeModel(join(dir, name), buildResnet({ size, precision }).model);
  }
  return files;
}
