// A draft model's KV pool follows kv_cache_dtype as the target's does: the memory budget sizes the
// draft's pool as the target's scaled by the two models' KV elements per position, which holds
// only when both pools store the same type.

import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { openDraftRunner } from '../../../src/engine-worker/draft-model.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { tinyEngineConfig } from '../../support/engine-steps.js';

const SEGMENTS = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx', 'model_paged.segments');

describe('the draft model’s KV pool', () => {
  it.each([
    ['auto', 'float32'],
    ['fp16', 'float16'],
    ['int8', 'int8'],
  ] as const)(
    'kv_cache_dtype %s: target and draft pools both hold %s',
    async (kvCacheDtype, stored) => {
      const config = {
        ...tinyEngineConfig({ modelPath: SEGMENTS, maxNumSeqs: 4, maxNumBatchedTokens: 32, numBlocks: 64 }),
        kvCacheDtype,
        speculative: { method: 'draft_model' as const, draftModelPath: SEGMENTS, numSpeculativeTokens: 3, disableByBatchSize: 4 },
      };
      const target = await openModelRunner(config);
      const draft = await openDraftRunner(config, target.info);
      try {
        expect(target.info.shape.kvType).toBe(stored);
        expect(draft?.info.shape.kvType).toBe(stored);
        // As many positions as the target's pool, plus each sequence's proposals.
        expect(draft!.info.numBlocks).toBe(target.info.numBlocks + 4 * (Math.ceil(3 / target.info.blockSize) + 1));
      } finally {
        await draft?.release();
        await target.release();
      }
    },
    120_000,
  );
});
