// openModelRunner on the real default models: the tiny decoder gets the past-key-values runner
// with KV storage sized from the budget; the BERT encoder is refused with the names it has.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import type { RunnerOptions } from '../../../src/runners/model-runner.js';

const options = (modelPath: string, over: Partial<RunnerOptions> = {}): RunnerOptions => ({
  modelPath,
  device: 'cpu',
  intraOpNumThreads: 1,
  kvCacheBytes: 1 << 20,
  blockSize: 4,
  ...over,
});
const decoder = (file: string) => join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx', file);
/** One KV block of the tiny decoder: 4 layers × (K, V) × 2 KV heads × block 4 × head_dim 16 × 4 bytes. */
const FP32_BLOCK_BYTES = 4 * 2 * 2 * 4 * 16 * 4;

describe('openModelRunner', () => {
  it('gives the tiny decoder the past-key-values runner, its KV blocks sized from the budget', async () => {
    const runner = await openModelRunner(options(decoder('model.onnx'), { kvCacheBytes: 10 * FP32_BLOCK_BYTES + 1 }));
    try {
      expect(runner.info).toMatchObject({ kind: 'past-key-values', numBlocks: 10, blockSize: 4, device: 'cpu' });
      expect(runner.info.shape).toEqual({ numLayers: 4, numKvHeads: 2, headDim: 16, vocabSize: expect.any(Number), kvType: 'float32' });
    } finally {
      await runner.release();
    }
  });

  it('keeps fp16 KV for the fp16 variant, so the same budget holds twice the blocks', async () => {
    const runner = await openModelRunner(options(decoder('model_fp16.onnx'), { kvCacheBytes: 10 * FP32_BLOCK_BYTES }));
    try {
      expect(runner.info.shape.kvType).toBe('float16');
      expect(runner.info.numBlocks).toBe(20);
    } finally {
      await runner.release();
    }
  });

  it('refuses an encoder with UNSUPPORTED, naming the inputs it found', async () => {
    const attempt = openModelRunner(options(join(DEFAULT_REPOSITORY, 'bert-tiny', '1', 'model.onnx')));
    await expect(attempt).rejects.toMatchObject({
      code: 'UNSUPPORTED',
      message: expect.stringMatching(/^no runner for this model: inputs \[input_ids, .*supported: an Optimum decoder with past_key_values/),
    });
  });

  it('opens with intra-op spinning off and computes the same logits', async () => {
    const plan = {
      stepId: 0,
      scheduled: [{ requestId: 'a', tokenIds: [1, 2, 3], numComputedTokens: 0, blockTable: [0], sample: true, isNew: true, allLogits: false }],
      numScheduledTokens: 3,
      releasedRequestIds: [],
      blocksToCopy: [],
    };
    const logitsWith = async (intraOpSpinning: boolean | undefined) => {
      const runner = await openModelRunner(options(decoder('model.onnx'), intraOpSpinning === undefined ? {} : { intraOpSpinning }));
      try {
        return Float32Array.from((await runner.execute(plan)).get('a')!);
      } finally {
        await runner.release();
      }
    };
    const spinning = await logitsWith(undefined);
    const sleeping = await logitsWith(false);
    expect(sleeping.length).toBe(spinning.length);
    expect(sleeping).toEqual(spinning);
  });
});
