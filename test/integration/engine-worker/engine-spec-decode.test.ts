// N-gram speculative decoding with the real tiny decoder on both paged runners (the native
// kernel's segments and the paged graph): a copy-heavy workload — prompts that hold their own
// greedy continuation (the model's greedy output fed back as the prompt) — decodes with proposals
// accepted, and every request's greedy tokens equal the same engine's without speculation, under
// staggered arrivals and chunked prefill, on both heads (the greedy head, and logits for a batch
// where one row wants logprobs), with the block pool's integrity checked after every step.
// Sampled and logprobs rows propose too: seeded sampled rows give exactly their tokens without
// speculation (the acceptance rule's point-mass draw is decoding's own), logprobs rows the same
// logprobs.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { GenerateRequest, SamplingParams, StepOutput, TokenLogprob } from '../../../src/contracts/generate.js';
import { EngineCore, type EngineConfig } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const ONNX = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx');
const RUNNERS = [
  { kind: 'paged-native', modelPath: join(ONNX, 'model_paged.segments') },
  { kind: 'paged', modelPath: join(ONNX, 'model_paged.onnx') },
] as const;

const request = (id: string, prompt: readonly number[], maxTokens: number, sampling: Partial<SamplingParams> = {}): GenerateRequest => ({
  id,
  promptTokenIds: prompt,
  sampling: { ...GREEDY_SAMPLING, ...sampling },
  priority: 0,
  cacheSalt: null,
  stop: { maxTokens, minTokens: 0, eosTokenIds: [], ignoreEos: true, stopTokenIds: [] },
});
const config = (modelPath: string, speculative: boolean): EngineConfig => ({
  modelPath,
  device: 'cpu',
  intraOpNumThreads: 1,
  maxNumSeqs: 8,
  maxNumBatchedTokens: 24,
  maxModelLen: 512,
  blockSize: 4,
  kvCacheBytes: 4 << 20,
  enablePrefixCaching: true,
  sampleableVocabSize: 151_669,
  ...(speculative ? { speculative: { method: 'ngram', numSpeculativeTokens: 4, promptLookupMin: 1, promptLookupMax: 3, disableByBatchSize: 8 } } : {}),
});
const seeded = (seed: number, length: number) => Array.from({ length }, (_, i) => (seed * 7919 + i * 104_729) % 150_000);

/** Runs the engine until idle, adding `arrivals[step]` before each step; checks the pool after every step. */
async function drive(
  engine: EngineCore,
  arrivals: ReadonlyMap<number, readonly GenerateRequest[]>,
): Promise<{ tokens: Map<string, number[]>; logprobs: Map<string, TokenLogprob[]>; outputs: StepOutput[] }> {
  const tokens = new Map<string, number[]>();
  const logprobs = new Map<string, TokenLogprob[]>();
  const outputs: StepOutput[] = [];
  const last = Math.max(...arrivals.keys());
  for (let step = 0; step < 2000 && (engine.hasWork() || step <= last); step++) {
    for (const r of arrivals.get(step) ?? []) engine.add(r);
    if (!engine.hasWork()) continue;
    const output = await engine.step();
    outputs.push(output);
    for (const u of output.updates) {
      tokens.set(u.requestId, [...(tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
      if (u.logprobs) logprobs.set(u.requestId, [...(logprobs.get(u.requestId) ?? []), ...u.logprobs]);
    }
    engine.checkIntegrity();
  }
  return { tokens, logprobs, outputs };
}

async function run(modelPath: string, speculative: boolean, arrivals: ReadonlyMap<number, readonly GenerateRequest[]>) {
  const c = config(modelPath, speculative);
  const engine = EngineCore.create(c, await openModelRunner(c), () => {});
  try {
    return await drive(engine, arrivals);
  } finally {
    await engine.release();
  }
}

describe.each(RUNNERS)('speculative decoding on the $kind runner', ({ modelPath }) => {
  it('accepts proposals on prompts holding their own continuation, with greedy tokens equal to decoding without it', async () => {
    // The model's own greedy output, fed back as part of the prompt: its continuation is then in the prompt.
    const seeds = [seeded(1, 6), seeded(2, 11), seeded(3, 4)];
    const first = await run(modelPath, false, new Map([[0, seeds.map((p, i) => request(`seed${i}`, p, 24))]]));
    const copyHeavy = seeds.map((p, i) => {
      const continuation = first.tokens.get(`seed${i}`)!;
      return [...p, ...continuation, ...p, ...continuation.slice(0, 3)];
    });
    const arrivals = new Map<number, GenerateRequest[]>([
      [0, [request('copy0', copyHeavy[0]!, 40), request('plain', seeded(4, 30), 10)]],
      [2, [request('copy1', copyHeavy[1]!, 48)]],
      [5, [request('copy2', copyHeavy[2]!, 40), request('logprobs', copyHeavy[0]!, 40, { logprobs: true, topLogprobs: 2 })]],
      // Sampled rows propose too: seeded, their tokens are exactly those decoded without speculation.
      [3, [request('sampled', copyHeavy[1]!, 48, { temperature: 0.3, topK: 4, topP: 0.95, frequencyPenalty: 0.01, seed: 7, logprobs: true })]],
      [4, [request('sampled-bias', copyHeavy[2]!, 40, { temperature: 0.2, minP: 0.1, repetitionPenalty: 1.01, logitBias: { 17: 0.5 }, seed: 11 })]],
    ]);
    const without = await run(modelPath, false, arrivals);
    const withSpec = await run(modelPath, true, arrivals);
    expect(withSpec.tokens).toEqual(without.tokens);
    // The target's logprobs at each accepted position, as decoding token by token reports them.
    expect([...withSpec.logprobs.keys()].sort()).toEqual(['logprobs', 'sampled']);
    for (const [id, logprobs] of withSpec.logprobs) {
      const plain = without.logprobs.get(id)!;
      expect(logprobs.map((l) => l.tokenId)).toEqual(plain.map((l) => l.tokenId));
      logprobs.forEach((l, i) => expect(l.logprob).toBeCloseTo(plain[i]!.logprob, 3));
    }
    const spec = withSpec.outputs.flatMap((o) => (o.specDecode ? [o.specDecode] : []));
    const accepted = spec.reduce((n, s) => n + s.numAcceptedTokens, 0);
    expect(spec.length).toBeGreaterThan(0);
    expect(accepted).toBeGreaterThan(0);
    // No more steps for the same tokens.
    expect(withSpec.outputs.length).toBeLessThanOrEqual(without.outputs.length);
    // Logprobs and sampled rows proposed, and had proposals accepted where they follow the copied text closely enough.
    const final = withSpec.outputs.flatMap((o) => o.updates).filter((u) => u.finishReason !== null);
    const specOf = (id: string) => final.find((u) => u.requestId === id)!.specDecode;
    for (const id of ['logprobs', 'sampled', 'sampled-bias']) expect(specOf(id)?.numDrafts, id).toBeGreaterThan(0);
    for (const id of ['logprobs', 'sampled']) expect(specOf(id)?.numAcceptedTokens, id).toBeGreaterThan(0);
    expect(final.reduce((n, u) => n + (u.specDecode?.numAcceptedTokens ?? 0), 0)).toBe(accepted);
  }, 120_000);
});

it('is off on the past_key_values runner, and says why', async () => {
  const lines: string[] = [];
  const c = config(join(ONNX, 'model.onnx'), true);
  const engine = EngineCore.create(c, await openModelRunner(c), (line) => lines.push(line));
  await engine.release();
  expect(lines).toContain('speculative_config: off — checking proposals needs attention_backend paged (this model runs past_key_values)');
});
