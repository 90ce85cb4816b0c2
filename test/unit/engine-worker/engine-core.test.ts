// EngineCore behind the ModelRunner seam, with the fake model as its runner: the real scheduler,
// KV cache manager and sampler, no onnxruntime. Greedy sampling over the runner's logits must
// reproduce the fake model's own decoding, the block pool is the one the runner's info sizes,
// and messages that arrive while a step's forward pass is pending take effect after it, never
// on the rows being sampled. (test/integration/engine-worker/ runs this core on the real decoder.)
import { afterEach, describe, expect, it } from 'vitest';
import { GREEDY_SAMPLING, type GenerateRequest, type ScheduledRequest, type StepOutput } from '../../../src/contracts/generate.js';
import { EngineCore, type EngineSettings } from '../../../src/engine-worker/engine-core.js';
import { makeRequest, randomTokens, referenceOutput, rng, VOCAB } from '../../support/fake-model.js';
import { FakeModelRunner } from '../../support/fake-runner.js';

const SETTINGS: EngineSettings = { maxNumSeqs: 4, maxNumBatchedTokens: 16, maxModelLen: 256, enablePrefixCaching: true };
const engines: EngineCore[] = [];

function engineOver(runner: FakeModelRunner, settings: Partial<EngineSettings> = {}): EngineCore {
  const engine = EngineCore.create({ ...SETTINGS, ...settings }, runner, () => {});
  engines.push(engine);
  return engine;
}

afterEach(() => {
  for (const engine of engines.splice(0)) engine.checkIntegrity();
});

function collect(into: Map<string, number[]>, output: StepOutput): void {
  for (const u of output.updates) into.set(u.requestId, [...(into.get(u.requestId) ?? []), ...u.newTokenIds]);
}

describe('EngineCore over a runner with a greedy head', () => {
  const SAMPLEABLE = VOCAB - 24;
  /** Runs `other` beside a plain greedy request; returns each step's head and whether `other` was sampled in it. */
  async function headsBeside(
    other: GenerateRequest | null,
    needsLogits: (row: ScheduledRequest) => boolean = (row) => row.sample,
  ): Promise<{ steps: { head: string; samplesOther: boolean }[]; greedyTokens: number[] }> {
    const runner = new FakeModelRunner(64, 4, { greedyHead: true });
    const engine = engineOver(runner, { sampleableVocabSize: SAMPLEABLE });
    const greedy = makeRequest('greedy', [5, 6, 7, 8, 9, 10], { maxTokens: 12 });
    engine.add(greedy);
    if (other) engine.add(other);
    const tokens = new Map<string, number[]>();
    while (engine.hasWork()) collect(tokens, await engine.step());
    const steps = runner.plans.map((plan, i) => ({ head: runner.heads[i]!, samplesOther: plan.scheduled.some((r) => r.requestId === other?.id && needsLogits(r)) }));
    expect(tokens.get('greedy')).toEqual(referenceOutput(greedy, SETTINGS.maxModelLen));
    return { steps, greedyTokens: tokens.get('greedy')! };
  }

  it('plain greedy rows take their tokens from the head, bounded by the sampleable vocabulary, and decode as the model does alone', async () => {
    const { steps } = await headsBeside(makeRequest('also-greedy', [3, 1, 4, 1, 5], { maxTokens: 9 }));
    expect(steps.map((s) => s.head)).toEqual(steps.map(() => `greedy<${SAMPLEABLE}`));
  });

  const sampledRows = (row: ScheduledRequest) => row.sample;
  const needLogits: [string, (r: GenerateRequest) => GenerateRequest, ((row: ScheduledRequest) => boolean)?][] = [
    ['a sampled row (temperature 0.8)', (r) => ({ ...r, sampling: { ...GREEDY_SAMPLING, temperature: 0.8, seed: 3 } })],
    ['a greedy row with logprobs', (r) => ({ ...r, sampling: { ...GREEDY_SAMPLING, logprobs: true, topLogprobs: 2 } })],
    ['a greedy row with a repetition penalty', (r) => ({ ...r, sampling: { ...GREEDY_SAMPLING, repetitionPenalty: 1.3 } })],
    ['a greedy row with a logit bias', (r) => ({ ...r, sampling: { ...GREEDY_SAMPLING, logitBias: { 7: 5 } } })],
    ['a greedy row under min_tokens (EOS banned)', (r) => ({ ...r, stop: { ...r.stop, minTokens: 4, eosTokenIds: [2] } })],
    // Its prompt chunks want every position's logits; its decode rows are plain greedy again.
    ['a request for prompt logprobs', (r) => ({ ...r, promptLogprobs: 1 }), (row) => row.allLogits === true],
  ];
  it.each(needLogits)('%s makes every step that needs its logits read them, the others the head', async (_, shape, needs) => {
    const { steps } = await headsBeside(shape(makeRequest('other', [2, 7, 1, 8, 2, 8, 1, 8], { maxTokens: 4 })), needs ?? sampledRows);
    expect(steps.some((s) => s.samplesOther)).toBe(true);
    for (const { head, samplesOther } of steps) expect(head).toBe(samplesOther ? 'logits' : `greedy<${SAMPLEABLE}`);
    expect(steps.some((s) => !s.samplesOther)).toBe(true); // the greedy request outlives it
  });
});

describe('EngineCore over a ModelRunner', () => {
  it('plans with the block pool the runner reports and decodes as the model does alone', async () => {
    const runner = new FakeModelRunner(64);
    const engine = engineOver(runner);
    expect(engine.stats().numTotalBlocks).toBe(64);
    const next = rng(7);
    const requests = Array.from({ length: 6 }, (_, i) => makeRequest(`r${i}`, randomTokens(next, 3 + next(30)), { maxTokens: 5 + next(10) }));
    const tokens = new Map<string, number[]>();
    for (const r of requests.slice(0, 3)) engine.add(r);
    for (let step = 0; engine.hasWork() || step < 3; step++) {
      if (step === 2) for (const r of requests.slice(3)) engine.add(r);
      if (engine.hasWork()) collect(tokens, await engine.step());
      engine.checkIntegrity();
    }
    for (const r of requests) expect(tokens.get(r.id), r.id).toEqual(referenceOutput(r, SETTINGS.maxModelLen));
    expect(Math.max(...runner.plans.map((p) => p.scheduled.length))).toBeGreaterThan(2); // really batched
    expect(engine.runnerStats.lastStepCalls).toBe(1);
  });

  it('holds an abort that arrives mid-step until the step is applied, then drops the row and frees its blocks', async () => {
    const runner = new FakeModelRunner(64);
    const engine = engineOver(runner);
    const a = makeRequest('a', [1, 2, 3, 4, 5], { maxTokens: 20 });
    const b = makeRequest('b', [9, 8, 7], { maxTokens: 4 });
    engine.add(a);
    engine.add(b);
    await engine.step();
    const letGo = runner.hold();
    const stepping = engine.step();
    engine.abort('a');
    expect(engine.stats().numRunning).toBe(2); // the step is still sampling from a's record
    letGo();
    const output = await stepping;
    const forA = output.updates.filter((u) => u.requestId === 'a');
    expect(forA).toHaveLength(1);
    expect(forA[0]).toMatchObject({ finishReason: 'abort', newTokenIds: [] });
    expect(output.updates.find((u) => u.requestId === 'b')?.newTokenIds).toHaveLength(1);
    expect(output.stats.numRunning).toBe(1);
    const tokens = new Map<string, number[]>();
    while (engine.hasWork()) collect(tokens, await engine.step());
    expect(runner.plans.at(-1)!.scheduled.map((s) => s.requestId)).toEqual(['b']);
    expect(engine.stats().numFreeBlocks).toBe(64);
  });

  it('an add that arrives mid-step joins the next plan and decodes as it would alone', async () => {
    const runner = new FakeModelRunner(64);
    const engine = engineOver(runner);
    const first = makeRequest('first', [1, 2, 3], { maxTokens: 3 });
    const late = makeRequest('late', [4, 5, 6], { maxTokens: 3 });
    engine.add(first);
    const letGo = runner.hold();
    const stepping = engine.step();
    engine.add(late);
    letGo();
    await stepping;
    expect(runner.plans[0]!.scheduled.map((s) => s.requestId)).toEqual(['first']);
    const tokens = new Map<string, number[]>();
    while (engine.hasWork()) collect(tokens, await engine.step());
    expect(runner.plans[1]!.scheduled.map((s) => s.requestId)).toEqual(['first', 'late']);
    expect(tokens.get('late')).toEqual(referenceOutput(late, SETTINGS.maxModelLen));
  });

  it('owns the runner it is given: release() releases it', async () => {
    const runner = new FakeModelRunner(8);
    const engine = engineOver(runner);
    await engine.release();
    expect(runner.released).toBe(true);
  });
});
