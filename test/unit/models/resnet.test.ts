import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Precision } from '../../../kernels/linear.js';
import { floatTensor } from '../../../kernels/onnx/dtypes.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import { PRECISIONS, VARIANT_FILE, sha256Of } from '../../../models/common/model-files.js';
import { DEFAULT_RESNET_SEED, RESNET_CONFIGS } from '../../../models/resnet/config.js';
import { buildResnetGraph } from '../../../models/resnet/graph.js';
import { syntheticImages } from '../../../models/resnet/images.js';
import { buildResnet, writeResnetModel } from '../../../models/resnet/resnet.js';
import { initResnetWeights, resnetReference } from '../../../models/resnet/weights.js';
import { createSession, relativeError, runAsFloat64 } from '../../support/onnx.js';

// Bump together with the catalog's builder version when the tiny model's bytes change on purpose.
const TINY_FP32_SHA256 = 'e71e3503be4ac824c7f47cb90125e2ddb9d737c37fe0411f196d34a951bdeb93';

const CLASSES = 1000;
const PIXELS = 3 * 224 * 224;
const sessions = {} as Record<Precision, ort.InferenceSession>;

beforeAll(async () => {
  for (const precision of PRECISIONS) sessions[precision] = await createSession(buildResnet({ size: 'tiny', precision }).model.toBytes());
});

async function logits(precision: Precision, images: Float32Array): Promise<Float64Array> {
  const batch = images.length / PIXELS;
  const { logits } = await runAsFloat64(sessions[precision], { input: floatTensor('float32', [batch, 3, 224, 224], images) });
  expect(logits!.dims).toEqual([batch, CLASSES]);
  return logits!.data;
}

function top(row: Float64Array, k: number): number[] {
  return Array.from(row.keys())
    .sort((a, b) => row[b]! - row[a]!)
    .slice(0, k);
}

const rows = (data: Float64Array) => Array.from({ length: data.length / CLASSES }, (_, i) => data.subarray(i * CLASSES, (i + 1) * CLASSES));

describe('resnet tiny', () => {
  it('builds byte-deterministically, calibration included', () => {
    const first = sha256Of(buildResnet({ size: 'tiny', precision: 'fp32' }).model);
    const fresh = initResnetWeights(RESNET_CONFIGS.tiny, DEFAULT_RESNET_SEED);
    expect(sha256Of(buildResnetGraph(RESNET_CONFIGS.tiny, fresh, 'fp32'))).toBe(first);
    expect(first).toBe(TINY_FP32_SHA256);
  });

  it('keeps the same float32 I/O in every variant', () => {
    for (const precision of PRECISIONS) {
      const s = sessions[precision];
      expect([s.inputNames, s.outputNames]).toEqual([['input'], ['logits']]);
      const [input, output] = [s.inputMetadata[0]!, s.outputMetadata[0]!];
      expect(input.isTensor && [input.type, input.shape]).toEqual(['float32', ['batch_size', 3, 224, 224]]);
      expect(output.isTensor && [output.type, output.shape]).toEqual(['float32', ['batch_size', CLASSES]]);
    }
  });

  it('gives each row of a batch what the image gets alone, finite and spread out', async () => {
    const images = syntheticImages(Date.now(), 3);
    const batched = await logits('fp32', images);
    for (let i = 0; i < 3; i++) {
      const alone = await logits('fp32', images.subarray(i * PIXELS, (i + 1) * PIXELS));
      expect(relativeError(batched.subarray(i * CLASSES, (i + 1) * CLASSES), alone)).toBeLessThan(1e-6);
    }
    expect(batched.every(Number.isFinite)).toBe(true);
    const mean = batched.reduce((a, b) => a + b, 0) / batched.length;
    const std = Math.sqrt(batched.reduce((a, b) => a + (b - mean) ** 2, 0) / batched.length);
    expect(std).toBeGreaterThan(0.5);
    expect(std).toBeLessThan(20);
  });

  it('matches the float64 reference forward pass in fp32', async () => {
    const images = syntheticImages(Date.now() + 1, 1);
    const expected = resnetReference(initResnetWeights(RESNET_CONFIGS.tiny, DEFAULT_RESNET_SEED), refTensor([1, 3, 224, 224], images));
    expect(relativeError(await logits('fp32', images), expected.data)).toBeLessThan(1e-5);
  });

  // A fixed set of images: ORT on CPU is deterministic, so the agreement counts are too, and a
  // drop in them means the build changed, not that the dice did.
  it('fp16 and int8 agree with fp32 on most of 16 images', async () => {
    const images = syntheticImages(16, 16);
    const reference = rows(await logits('fp32', images));
    const classes = new Set(reference.map((row) => top(row, 1)[0]));
    const report: string[] = [`fp32: ${classes.size}/16 distinct top-1 classes`];
    const results: Record<string, { top1: number; inTop5: number; error: number }> = {};
    for (const precision of ['fp16', 'int8'] as const) {
      const data = await logits(precision, images);
      const variant = rows(data);
      const top1 = variant.filter((row, i) => top(row, 1)[0] === top(reference[i]!, 1)[0]).length;
      const inTop5 = variant.filter((row, i) => top(row, 5).includes(top(reference[i]!, 1)[0]!)).length;
      const error = relativeError(data, await logits('fp32', images));
      results[precision] = { top1, inTop5, error };
      report.push(`${precision}: top-1 agrees ${top1}/16, fp32 top-1 in its top-5 ${inTop5}/16, max logit error ${(error * 100).toFixed(2)}% of max |logit|`);
    }
    console.log(report.join('\n'));
    expect(classes.size).toBeGreaterThanOrEqual(6);
    expect(results.fp16).toMatchObject({ top1: expect.toBeOneOf([15, 16]), inTop5: 16 });
    expect(results.fp16!.error).toBeLessThan(1e-2);
    // Random weights give flat logits (top-1 and top-2 close), so int8 flips more top-1s than
    // it would on a trained model; the fp32 answer must still be among its top five.
    expect(results.int8!.top1).toBeGreaterThanOrEqual(12);
    expect(results.int8!.inTop5).toBeGreaterThanOrEqual(15);
    expect(results.int8!.error).toBeLessThan(0.1);
  });
});

describe('writeResnetModel', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'conveyor-resnet-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes the three variants and 1000 labels, returning their sha256s', async () => {
    const files = await writeResnetModel(dir, 'tiny');
    expect(Object.keys(files).sort()).toEqual(['labels.txt', ...PRECISIONS.map((p) => VARIANT_FILE[p])].sort());
    expect(files['model.onnx']).toBe(TINY_FP32_SHA256);
    const labels = (await readFile(join(dir, 'labels.txt'), 'utf8')).split('\n');
    expect(labels.at(-1)).toBe('');
    expect(new Set(labels.slice(0, -1)).size).toBe(CLASSES);
  });
});
