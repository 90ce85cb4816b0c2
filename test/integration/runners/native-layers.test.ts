// The segmented decoder's segments by the kernel's layer ops
// (src/runners/native-layers.ts) against the same segments in ONNX Runtime
// (CONVEYOR_NATIVE_LAYERS=0), step by step on the same plans: a prompt (more rows than the ops
// take, so ORT), then steps of 1, 3, 8 (the ops' bound) and 9 rows (ORT again), two sequences in
// one step. The logits agree to float32 rounding and the greedy tokens are equal, read from the
// logits and from the greedy head, for the wirings the ops cover: Qwen3's per-head q/k norms; a
// LLaMA / Qwen2 layer without them and with q/k/v biases; GeGLU with a family attention scale,
// partial rotary with an attention factor and a layer without RoPE; an untied lm_head with a
// logits multiplier and ids past the tokenizer; an embedding multiplier. Segment 0 runs natively
// too (its lookup from the lm_head's packed table where tied, its own where not). A final logit
// soft cap keeps the first and last segments in ORT, and a wiring the ops do not cover (Gemma 3's sandwich norms) keeps every segment there;
// the runner's note says why.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeModel } from '../../../models/common/model-files.js';
import { DECODER_CONFIGS, type DecoderConfig } from '../../../models/qwen3/config.js';
import { buildPagedSegmentGraph, pagedSegmentCount } from '../../../models/qwen3/paged-segments.js';
import { type DecoderWeights, initDecoderWeights } from '../../../models/qwen3/weights.js';
import type { StepPlan } from '../../../src/contracts/generate.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import type { ModelRunner } from '../../../src/runners/model-runner.js';
import { NATIVE_LAYER_MAX_ROWS } from '../../../src/runners/native-layers.js';

const BASE: DecoderConfig = { ...DECODER_CONFIGS.tiny, vocabSize: 512, tokenizerVocabSize: 512 };
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function writeSegments(c: DecoderConfig, weights: DecoderWeights): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'conveyor-native-layers-'));
  dirs.push(dir);
  for (let segment = 0; segment < pagedSegmentCount(c); segment++) {
    await writeModel(join(dir, 'model_paged.segments', `segment_${String(segment).padStart(2, '0')}.onnx`), buildPagedSegmentGraph(c, weights, 'fp32', segment));
  }
  return join(dir, 'model_paged.segments');
}

async function open(path: string, nativeLayers: boolean): Promise<ModelRunner> {
  const saved = process.env['CONVEYOR_NATIVE_LAYERS'];
  process.env['CONVEYOR_NATIVE_LAYERS'] = nativeLayers ? '1' : '0';
  try {
    return await openModelRunner({ modelPath: path, device: 'cpu', intraOpNumThreads: 2, kvCacheBytes: 4 << 20, blockSize: 4 });
  } finally {
    if (saved === undefined) delete process.env['CONVEYOR_NATIVE_LAYERS'];
    else process.env['CONVEYOR_NATIVE_LAYERS'] = saved;
  }
}

/** Steps as [sequence, tokens][] rows: each sequence's tokens follow its earlier ones. */
const STEPS: readonly (readonly [string, number][])[] = [
  [['a', 21]],
  [['a', 1]],
  [['a', 3]],
  [
    ['a', 5],
    ['b', 3],
  ],
  [['a', 9]],
  [['a', 1]],
];

/** STEPS as plans: each sequence's tokens follow its earlier ones, every position sampled (as a verify step's). */
function stepPlans(): StepPlan[] {
  const computed = new Map<string, number>();
  const tables = { a: Array.from({ length: 16 }, (_, i) => i), b: Array.from({ length: 16 }, (_, i) => 16 + i) } as Record<string, number[]>;
  return STEPS.map((rows, stepId) => {
    const scheduled = rows.map(([requestId, count]) => {
      const past = computed.get(requestId) ?? 0;
      computed.set(requestId, past + count);
      const tokenIds = Array.from({ length: count }, (_, i) => 3 + (((past + i) * 37 + stepId) % 500));
      return { requestId, tokenIds, numComputedTokens: past, blockTable: tables[requestId]!, sample: true, isNew: past === 0, numDraftTokens: past === 0 ? 0 : count - 1 };
    });
    return { stepId, scheduled, numScheduledTokens: scheduled.reduce((n, r) => n + r.tokenIds.length, 0), releasedRequestIds: [], blocksToCopy: [] };
  });
}

/** Every step's logits rows and greedy-head tokens, per sequence, on `runner` (the same plans run twice: the pool's contents are rewritten the same). */
async function outputsOf(runner: ModelRunner): Promise<{ logits: Float32Array[][]; greedy: (readonly number[])[][] }> {
  const [logits, greedy]: [Float32Array[][], (readonly number[])[][]] = [[], []];
  try {
    for (const plan of stepPlans()) {
      const rows = await runner.execute(plan);
      logits.push(plan.scheduled.map(({ requestId }) => rows.get(requestId)!));
    }
    for (const plan of stepPlans()) {
      const tokens = await runner.executeGreedy!(plan, BASE.tokenizerVocabSize - 7);
      greedy.push(plan.scheduled.map(({ requestId }) => tokens.get(requestId)!));
    }
  } finally {
    await runner.release();
  }
  return { logits, greedy };
}

function expectSameLogits(actual: Float32Array[][], expected: Float32Array[][]): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((step, s) =>
    step.forEach((rows, r) => {
      const reference = expected[s]![r]!;
      expect(rows.length).toBe(reference.length);
      let worst = 0;
      for (let i = 0; i < rows.length; i++) worst = Math.max(worst, Math.abs(rows[i]! - reference[i]!));
      expect(worst, `step ${s} sequence ${r}`).toBeLessThan(2e-4);
      const argmax = (values: Float32Array, from: number) => values.subarray(from, from + BASE.vocabSize).reduce((best, v, i, all) => (v > all[best]! ? i : best), 0);
      for (let from = 0; from < rows.length; from += BASE.vocabSize) expect(argmax(rows, from)).toBe(argmax(reference, from));
    }),
  );
}

async function compareBackends(c: DecoderConfig, weights: DecoderWeights, ends = 'segment 0 and the last segment \\(final norm, lm_head\\) too'): Promise<void> {
  const path = await writeSegments(c, weights);
  const native = await open(path, true);
  expect(native.info.note).toMatch(new RegExp(`layers 1\\.\\.${c.numLayers - 1} by the kernel's layer ops at up to ${NATIVE_LAYER_MAX_ROWS} rows, ${ends}`));
  const [actual, expected] = [await outputsOf(native), await outputsOf(await open(path, false))];
  expectSameLogits(actual.logits, expected.logits);
  // The greedy head's picks over the sampleable ids: the model's ArgMax in ORT, outputsOf's outside it.
  expect(actual.greedy).toEqual(expected.greedy);
}

describe('inner segments by the kernel layer ops', () => {
  it("Qwen3's wiring (per-head q/k norms, SwiGLU) gives ONNX Runtime's logits", async () => {
    await compareBackends(BASE, initDecoderWeights(BASE));
  }, 60_000);

  it('a LLaMA / Qwen2 layer (no q/k norms, q/k/v biases) gives ONNX Runtime’s logits', async () => {
    const weights = initDecoderWeights(BASE);
    const bias = (n: number, salt: number) => Float32Array.from({ length: n }, (_, i) => 0.05 * Math.sin(i * 0.7 + salt));
    const layers = weights.layers.map(({ qNorm: _q, kNorm: _k, ...layer }, i) => ({
      ...layer,
      q: { ...layer.q, bias: bias(layer.q.outFeatures, i) },
      k: { ...layer.k, bias: bias(layer.k.outFeatures, i + 1) },
      v: { ...layer.v, bias: bias(layer.v.outFeatures, i + 2) },
    }));
    await compareBackends(BASE, { ...weights, layers });
  }, 60_000);

  it('GeGLU, a family attention scale, partial rotary with an attention factor and a layer without RoPE give ONNX Runtime’s logits', async () => {
    const rope = { inverseFrequencies: Array.from({ length: 4 }, (_, i) => 1 / 10_000 ** (i / 4)), attentionFactor: 1.2 };
    const c: DecoderConfig = {
      ...BASE,
      variant: { norms: 'pre', qkNorm: 'head', activation: 'gelu_tanh', embeddingMultiplier: 8, attentionScale: 0.2, logitsMultiplier: 1 },
      layerSpecs: [{ rope }, { rope }, {}, { rope, slidingWindow: 6 }],
    };
    await compareBackends(c, initDecoderWeights(c));
  }, 60_000);

  it('an untied lm_head (segment 0 packs its own table), a logits multiplier and ids past the tokenizer (their bias) give ONNX Runtime’s logits from the native first and last segments', async () => {
    const c: DecoderConfig = { ...BASE, tokenizerVocabSize: 500, variant: { norms: 'pre', qkNorm: 'head', activation: 'silu', embeddingMultiplier: 1, logitsMultiplier: 0.25 } };
    const weights = initDecoderWeights(c);
    const lmHead = Float32Array.from({ length: c.vocabSize * c.hiddenSize }, (_, i) => 0.08 * Math.sin(i * 0.37));
    await compareBackends(c, { ...weights, lmHead });
  }, 60_000);

  it('a final logit soft cap keeps the first and last segments in ONNX Runtime, and says why', async () => {
    const c: DecoderConfig = { ...BASE, variant: { norms: 'pre', qkNorm: 'head', activation: 'silu', embeddingMultiplier: 1, logitsMultiplier: 1, finalLogitSoftcap: 30 } };
    await compareBackends(c, initDecoderWeights(c), 'segment 0 and the last segment in ONNX Runtime \\(a final logit soft cap\\)');
  }, 60_000);

  it("a wiring the ops do not cover (Gemma 3's sandwich norms) stays in ONNX Runtime and says why", async () => {
    const c: DecoderConfig = { ...BASE, variant: { norms: 'sandwich', qkNorm: 'head', activation: 'gelu_tanh', embeddingMultiplier: 8, logitsMultiplier: 1 } };
    const weights = initDecoderWeights(c);
    const norm = (n: number) => new Float32Array(n).fill(1.1);
    const layers = weights.layers.map((layer) => ({ ...layer, preFeedforwardNorm: norm(c.hiddenSize), postFeedforwardNorm: norm(c.hiddenSize) }));
    const runner = await open(await writeSegments(c, { ...weights, layers }), true);
    await runner.release();
    expect(runner.info.note).toMatch(/layer ops unavailable \(segment 1: norms 'sandwich'/);
  }, 60_000);
});
