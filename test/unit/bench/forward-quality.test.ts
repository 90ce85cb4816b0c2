// The forward bench's quality note (bench/scenarios/forward/quality.ts) on the tiny decoder's real
// variants: identical models agree everywhere, fp16 nearly so, q4 measurably less.
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { decoderQuality } from '../../../bench/scenarios/forward/quality.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';

const open = (file: string) => ort.InferenceSession.create(join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx', file), { intraOpNumThreads: 1, logSeverityLevel: 3 });

describe('decoder variant quality against fp32', () => {
  it('scores a model against itself, fp16 and q4 over every prefill position', async () => {
    const [fp32, fp16, q4] = [await open('model.onnx'), await open('model_fp16.onnx'), await open('model_q4.onnx')];
    expect(await decoderQuality(fp32, fp32, 64)).toEqual({ positions: 64, top1Agreement: 1, maxAbsLogitDiff: 0 });
    const half = await decoderQuality(fp32, fp16, 64);
    expect(half.top1Agreement).toBeGreaterThanOrEqual(0.95);
    expect(half.maxAbsLogitDiff).toBeGreaterThan(0);
    expect(half.maxAbsLogitDiff).toBeLessThan(0.1);
    const four = await decoderQuality(fp32, q4, 64);
    expect(four.top1Agreement).toBeLessThan(half.top1Agreement);
    expect(four.maxAbsLogitDiff).toBeGreaterThan(half.maxAbsLogitDiff);
    for (const session of [fp32, fp16, q4]) await session.release();
  });
});
