// Sliding-window attention end to end through the three attention backends on one tiny decoder
// whose layers mix windows (4, full, 8, full): the Optimum graph (past_key_values), the paged
// graph (paged_onnx) and the segmented decoder with the native kernel (paged, its windows read
// from the segments' metadata). Two sequences share the steps: a 40-token prompt prefilled in two
// chunks (25, then 15 over a past longer than every window) beside a 23-token prompt, then
// greedy decode steps. All three pick the same tokens with the same logits, and the windows
// change the logits against the same weights without them.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeModel } from '../../../models/common/model-files.js';
import { DECODER_CONFIGS, type DecoderConfig, type DecoderLayerSpec } from '../../../models/qwen3/config.js';
import { buildDecoderGraph } from '../../../models/qwen3/graph.js';
import { buildPagedDecoderGraph } from '../../../models/qwen3/paged-graph.js';
import { buildPagedSegmentGraph, pagedSegmentCount } from '../../../models/qwen3/paged-segments.js';
import { initDecoderWeights } from '../../../models/qwen3/weights.js';
import type { ScheduledRequest, StepPlan } from '../../../src/contracts/generate.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import type { ModelRunner, RunnerOptions } from '../../../src/runners/model-runner.js';
import { argmax } from '../../../src/sampler/select.js';
import { relativeError } from '../../support/onnx.js';

const WINDOWS = [4, undefined, 8, undefined] as const;
const SAMPLEABLE = 151_669;
const BLOCK_SIZE = 4;
const DECODE_STEPS = 8;
const tiny = DECODER_CONFIGS.tiny;
// Every layer's RoPE spelled out (the default θ^(-2i/D)), so the specs differ from the plain config only in their windows.
const rope = { inverseFrequencies: Array.from({ length: tiny.headDim / 2 }, (_, i) => tiny.ropeTheta ** ((-2 * i) / tiny.headDim)), attentionFactor: 1 };
const windowed: DecoderConfig = { ...tiny, layerSpecs: WINDOWS.map((window): DecoderLayerSpec => ({ rope, ...(window === undefined ? {} : { slidingWindow: window }) })) };

const PROMPTS = [Array.from({ length: 40 }, (_, i) => 100 + ((i * 7919) % 5000)), Array.from({ length: 23 }, (_, i) => 200 + ((i * 104_729) % 7000))];
/** Each sequence's blocks, shuffled apart in the pool. */
const TABLES = PROMPTS.map((_, s) => Array.from({ length: 16 }, (_, b) => (s === 0 ? 3 * b + 1 : 60 - 2 * b)));

let dir: string;
const modelDirs: Record<'windowed' | 'full', string> = { windowed: '', full: '' };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conveyor-sliding-window-'));
  const weights = initDecoderWeights(tiny);
  for (const [name, c] of [
    ['windowed', windowed],
    ['full', tiny],
  ] as const) {
    const at = join(dir, name);
    modelDirs[name] = at;
    await writeModel(join(at, 'model.onnx'), buildDecoderGraph(c, weights, 'fp32'));
    await writeModel(join(at, 'model_paged.onnx'), buildPagedDecoderGraph(c, weights, 'fp32'));
    for (let segment = 0; segment < pagedSegmentCount(c); segment++) {
      await writeModel(join(at, 'model_paged.segments', `segment_${String(segment).padStart(2, '0')}.onnx`), buildPagedSegmentGraph(c, weights, 'fp32', segment));
    }
  }
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const options = (modelPath: string): RunnerOptions => ({ modelPath, device: 'cpu', intraOpNumThreads: 1, kvCacheBytes: 4 << 20, blockSize: BLOCK_SIZE });

/** Greedy generation of both sequences on `runner`: each step's tokens and logits rows. */
async function generate(runner: ModelRunner): Promise<{ tokens: number[][]; logits: Float32Array[] }> {
  const tokens: number[][] = PROMPTS.map(() => []);
  const logits: Float32Array[] = [];
  const computed = [0, 0];
  const row = (s: number, tokenIds: number[], sample: boolean): ScheduledRequest => ({
    requestId: `s${s}`,
    tokenIds,
    numComputedTokens: computed[s]!,
    blockTable: TABLES[s]!,
    sample,
    isNew: computed[s] === 0,
  });
  const step = async (stepId: number, scheduled: ScheduledRequest[]): Promise<void> => {
    const plan: StepPlan = { stepId, scheduled, numScheduledTokens: scheduled.reduce((n, r) => n + r.tokenIds.length, 0), releasedRequestIds: [], blocksToCopy: [] };
    const out = await runner.execute(plan);
    for (const r of scheduled) {
      const s = Number(r.requestId.slice(1));
      computed[s]! += r.tokenIds.length;
      if (!r.sample) continue;
      const rowLogits = Float32Array.from(out.get(r.requestId)!);
      logits.push(rowLogits);
      tokens[s]!.push(argmax(rowLogits, SAMPLEABLE));
    }
  };
  try {
    expect(runner.info.numBlocks).toBeGreaterThan(60);
    // A chunk of the long prompt beside the short one; then its rest over a past longer than every window, beside the short one's first decode token.
    await step(0, [row(0, PROMPTS[0]!.slice(0, 25), false), row(1, PROMPTS[1]!, true)]);
    await step(1, [row(0, PROMPTS[0]!.slice(25), true), row(1, [tokens[1]!.at(-1)!], true)]);
    for (let d = 0; d < DECODE_STEPS; d++)
      await step(
        2 + d,
        [0, 1].map((s) => row(s, [tokens[s]!.at(-1)!], true)),
      );
  } finally {
    await runner.release();
  }
  return { tokens, logits };
}

const worst = (a: Float32Array[], b: Float32Array[]) => Math.max(...a.map((row, i) => relativeError(row, b[i]!)));

describe('sliding-window attention in every attention backend', () => {
  it('past_key_values, paged_onnx and the native paged kernel pick the same greedy tokens with the same logits on mixed windows [4, full, 8, full]', async () => {
    const at = modelDirs.windowed;
    const optimum = await generate(await openModelRunner(options(join(at, 'model.onnx'))));
    const pagedRunner = await openModelRunner(options(join(at, 'model_paged.onnx')));
    expect(pagedRunner.info.kind).not.toBe('paged-native');
    const paged = await generate(pagedRunner);
    const nativeRunner = await openModelRunner(options(join(at, 'model_paged.segments')));
    expect(nativeRunner.info.kind).toBe('paged-native');
    const native = await generate(nativeRunner);

    expect(paged.tokens).toEqual(optimum.tokens);
    expect(native.tokens).toEqual(optimum.tokens);
    const agreement = Math.max(worst(paged.logits, optimum.logits), worst(native.logits, optimum.logits));
    expect(agreement).toBeLessThan(1e-4);
    expect(optimum.tokens.map((t) => t.length)).toEqual([DECODE_STEPS + 1, DECODE_STEPS + 2]);

    // The windows matter: the same weights with full attention in every layer give other logits in
    // each backend, far beyond the backends' disagreement (the tiny random model's logits depend
    // little on attention, so the difference is small in absolute terms).
    for (const file of ['model.onnx', 'model_paged.onnx', 'model_paged.segments']) {
      const full = await generate(await openModelRunner(options(join(modelDirs.full, file))));
      expect(worst(full.logits, optimum.logits), file).toBeGreaterThan(Math.max(1e-5, 100 * agreement));
    }
  }, 120_000);
});
