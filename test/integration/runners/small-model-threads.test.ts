// A segmented decoder whose weights fit SINGLE_THREAD_MODEL_BYTES runs its ONNX Runtime sessions
// on one intra-op thread whatever intraOpNumThreads asks (create-runner.ts says why), says so in
// its note, and gives the tokens the paged graph gives on the threads asked for; a larger one
// keeps the threads asked for.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeModel } from '../../../models/common/model-files.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { DECODER_CONFIGS, type DecoderConfig } from '../../../models/qwen3/config.js';
import { buildPagedDecoderGraph } from '../../../models/qwen3/paged-graph.js';
import { buildPagedSegmentGraph, pagedSegmentCount } from '../../../models/qwen3/paged-segments.js';
import { initDecoderWeights } from '../../../models/qwen3/weights.js';
import type { StepPlan } from '../../../src/contracts/generate.js';
import { openModelRunner, SINGLE_THREAD_MODEL_BYTES } from '../../../src/runners/create-runner.js';
import type { ModelRunner, RunnerOptions } from '../../../src/runners/model-runner.js';

/** stories260K's size class: a 512-token vocabulary, hidden 64. */
const SMALL: DecoderConfig = { ...DECODER_CONFIGS.tiny, numLayers: 2, vocabSize: 512, tokenizerVocabSize: 512 };
const PROMPT = Array.from({ length: 21 }, (_, i) => 3 + ((i * 37) % 500));
const BLOCK_SIZE = 4;
const options = (modelPath: string): RunnerOptions => ({ modelPath, device: 'cpu', intraOpNumThreads: 2, kvCacheBytes: 1 << 20, blockSize: BLOCK_SIZE });

let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conveyor-small-model-'));
  const weights = initDecoderWeights(SMALL);
  await writeModel(join(dir, 'model_paged.onnx'), buildPagedDecoderGraph(SMALL, weights, 'fp32'));
  for (let segment = 0; segment < pagedSegmentCount(SMALL); segment++) {
    await writeModel(join(dir, 'model_paged.segments', `segment_${String(segment).padStart(2, '0')}.onnx`), buildPagedSegmentGraph(SMALL, weights, 'fp32', segment));
  }
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The prompt, then greedy steps that each check 3 tokens (a verify step's shape): every greedy token. */
async function greedy(runner: ModelRunner): Promise<(readonly number[])[]> {
  const blockTable = Array.from({ length: 16 }, (_, i) => i);
  const out: (readonly number[])[] = [];
  let computed = 0;
  const run = async (tokenIds: number[]) => {
    const plan: StepPlan = {
      stepId: out.length,
      scheduled: [{ requestId: 'r', tokenIds, numComputedTokens: computed, blockTable, sample: true, isNew: computed === 0, numDraftTokens: computed === 0 ? 0 : tokenIds.length - 1 }],
      numScheduledTokens: tokenIds.length,
      releasedRequestIds: [],
      blocksToCopy: [],
    };
    const tokens = (await runner.executeGreedy!(plan, SMALL.vocabSize)).get('r')!;
    computed += tokenIds.length;
    out.push(tokens);
    return tokens;
  };
  try {
    let last = (await run(PROMPT)).at(-1)!;
    for (let step = 0; step < 4; step++) last = (await run([last, 7 + step, 11 + step])).at(-1)!;
  } finally {
    await runner.release();
  }
  return out;
}

describe('intra-op threads of a small segmented decoder', () => {
  it('runs on one thread, says so, and gives the paged graph’s tokens', async () => {
    const native = await openModelRunner(options(join(dir, 'model_paged.segments')));
    expect(native.info.kind).toBe('paged-native');
    expect(native.info.note).toMatch(/ONNX Runtime on 1 intra-op thread: 0\.\d MiB of weights/);
    const paged = await openModelRunner(options(join(dir, 'model_paged.onnx')));
    expect(paged.info.note ?? '').not.toMatch(/intra-op thread/);
    expect(await greedy(native)).toEqual(await greedy(paged));
  }, 60_000);

  it('a decoder past the bound keeps the threads asked for', async () => {
    const runner = await openModelRunner(options(join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx', 'model_paged.segments')));
    try {
      expect(runner.info.kind).toBe('paged-native');
      expect(runner.info.note ?? '').not.toMatch(/intra-op thread/);
      expect(SINGLE_THREAD_MODEL_BYTES).toBeLessThan(64 << 20);
    } finally {
      await runner.release();
    }
  }, 60_000);
});
