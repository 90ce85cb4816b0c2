// The engine with the real tiny decoder, on every runner — the Optimum graph's
// PastKeyValuesRunner, the paged graph's PagedRunner and the segmented paged decoder's
// NativePagedRunner (attention by the native kernel; same weights): whatever the batch
// composition (staggered arrivals, chunked prefill, preemption, prefix hits), every request's
// greedy tokens equal the tokens of the same request decoded alone by a plain loop over
// onnxruntime on the Optimum model.
import * as ort from 'onnxruntime-node';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest, SamplingParams, StepOutput } from '../../../src/contracts/generate.js';
import { EngineCore, type EngineConfig } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { pagedVariantFile } from '../../../src/repository/variants.js';
import { pagedSegmentsDir } from '../../../src/contracts/paged-segments.js';
import { greedy } from '../../support/decoder.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const ONNX = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx');
const MODEL = join(ONNX, 'model.onnx');
/** The runner each graph gets, and the graph's file for an Optimum variant file. */
const BACKENDS = [
  { kind: 'past-key-values', file: (optimum: string) => optimum },
  { kind: 'paged', file: pagedVariantFile },
  { kind: 'paged-native', file: (optimum: string) => pagedSegmentsDir(pagedVariantFile(optimum)) },
] as const;
const GREEDY = GREEDY_SAMPLING;
const request = (id: string, prompt: number[], maxTokens: number, sampling: SamplingParams = GREEDY): GenerateRequest => ({
  id,
  promptTokenIds: prompt,
  sampling,
  priority: 0,
  cacheSalt: null,
  stop: { maxTokens, minTokens: 0, eosTokenIds: [], ignoreEos: true, stopTokenIds: [] },
});
const baseConfig = (overrides: Partial<EngineConfig> = {}): EngineConfig => ({
  modelPath: MODEL,
  device: 'cpu',
  intraOpNumThreads: 1,
  maxNumSeqs: 8,
  maxNumBatchedTokens: 24,
  maxModelLen: 512,
  blockSize: 4,
  kvCacheBytes: 4 << 20,
  enablePrefixCaching: true,
  sampleableVocabSize: 151_669,
  ...overrides,
});
/** The engine as its worker builds it: the runner the model's inputs call for, then the core. */
const openEngine = async (c: EngineConfig, log: (line: string) => void = () => {}): Promise<EngineCore> => EngineCore.create(c, await openModelRunner(c), log);
const prompt = (seed: number, length: number) => Array.from({ length }, (_, i) => (seed * 7919 + i * 104_729) % 150_000);

/** Runs the engine until idle, adding `arrivals[step]` before each step; returns tokens per request. */
async function drive(engine: EngineCore, arrivals: Map<number, GenerateRequest[]>, afterStep: () => void = () => {}): Promise<{ tokens: Map<string, number[]>; outputs: StepOutput[] }> {
  const tokens = new Map<string, number[]>();
  const outputs: StepOutput[] = [];
  for (let step = 0; step < 2000; step++) {
    for (const r of arrivals.get(step) ?? []) engine.add(r);
    if (!engine.hasWork() && [...arrivals.keys()].every((k) => k <= step)) break;
    if (!engine.hasWork()) continue;
    const output = await engine.step();
    outputs.push(output);
    afterStep();
    for (const u of output.updates) tokens.set(u.requestId, [...(tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
    engine.checkIntegrity();
  }
  return { tokens, outputs };
}

let session: ort.InferenceSession;
const alone = new Map<string, number[]>();
const cases = [
  { id: 'a', prompt: prompt(1, 5), max: 12, at: 0 },
  { id: 'b', prompt: prompt(2, 40), max: 8, at: 0 }, // longer than the token budget: chunked prefill
  { id: 'c', prompt: prompt(3, 9), max: 15, at: 3 },
  { id: 'd', prompt: prompt(4, 17), max: 6, at: 5 },
  { id: 'e', prompt: prompt(5, 2), max: 20, at: 9 },
];

beforeAll(async () => {
  session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
  for (const c of cases) alone.set(c.id, await greedy(session, ort, c.prompt, c.max));
});

describe.each(BACKENDS)('EngineCore with the tiny decoder ($kind runner)', ({ kind, file: graphFile }) => {
  const config = (overrides: Partial<EngineConfig> = {}): EngineConfig => baseConfig({ modelPath: join(ONNX, graphFile('model.onnx')), ...overrides });
  const open = async (c: EngineConfig, log: (line: string) => void = () => {}): Promise<EngineCore> => {
    const engine = await openEngine(c, log);
    expect(engine.info.kind).toBe(kind);
    return engine;
  };

  it('continuous batching with staggered arrivals and chunked prefill equals each request alone', async () => {
    const engine = await open(config());
    const arrivals = new Map<number, GenerateRequest[]>();
    for (const c of cases) arrivals.set(c.at, [...(arrivals.get(c.at) ?? []), request(c.id, c.prompt, c.max)]);
    const { tokens, outputs } = await drive(engine, arrivals);
    for (const c of cases) expect(tokens.get(c.id), c.id).toEqual(alone.get(c.id));
    expect(Math.max(...outputs.map((o) => o.updates.length))).toBeGreaterThan(2); // really batched
    expect(outputs.at(-1)!.stats.numRunning).toBe(0);
  });

  it('forced preemption by a small KV budget still gives the same tokens', async () => {
    const logs: string[] = [];
    // 24 blocks of 4 tokens: not enough for all five requests at once.
    const engine = await open(config({ kvCacheBytes: 24 * 2 * 4 * 2 * 4 * 16 * 4 }), (l) => logs.push(l));
    expect(engine.info.numBlocks).toBe(24);
    const { tokens, outputs } = await drive(engine, new Map([[0, cases.map((c) => request(c.id, c.prompt, c.max))]]));
    for (const c of cases) expect(tokens.get(c.id), c.id).toEqual(alone.get(c.id));
    expect(outputs.at(-1)!.stats.numPreemptions).toBeGreaterThan(0);
    expect(logs.some((l) => /preempt/i.test(l))).toBe(true);
  });

  it('prefix-cache hits report cached tokens and change no token', async () => {
    const engine = await open(config());
    const shared = prompt(9, 20);
    const first = request('p1', [...shared, 11], 6);
    await drive(engine, new Map([[0, [first]]]));
    const second = request('p2', [...shared, 22], 6);
    const { tokens, outputs } = await drive(engine, new Map([[0, [second]]]));
    const cached = outputs.flatMap((o) => o.updates).find((u) => u.requestId === 'p2')!.numCachedTokens;
    expect(cached).toBe(20); // five full blocks of 4
    expect(tokens.get('p2')).toEqual(await greedy(session, ort, second.promptTokenIds as number[], 6));
  });

  it('fp16 and int8 variants run through the engine too', async () => {
    for (const file of ['model_fp16.onnx', 'model_quantized.onnx']) {
      const engine = await open(config({ modelPath: join(ONNX, graphFile(file)) }));
      const variantSession = await ort.InferenceSession.create(join(ONNX, file), { intraOpNumThreads: 1 });
      const { tokens } = await drive(engine, new Map([[0, cases.slice(0, 3).map((c) => request(c.id, c.prompt, c.max))]]));
      for (const c of cases.slice(0, 3)) expect(tokens.get(c.id), `${file} ${c.id}`).toEqual(await greedy(variantSession, ort, c.prompt, c.max));
    }
  });

  it('abort frees the blocks at once and reports the finish', async () => {
    const engine = await open(config());
    engine.add(request('x', prompt(7, 30), 50));
    await engine.step();
    await engine.step();
    const used = engine.stats().numTotalBlocks - engine.stats().numFreeBlocks;
    expect(used).toBeGreaterThan(0);
    engine.abort('x');
    expect(engine.stats().numTotalBlocks - engine.stats().numFreeBlocks).toBe(0);
    const news = engine.flush();
    expect(news.updates[0]).toMatchObject({ requestId: 'x', finishReason: 'abort' });
    engine.checkIntegrity();
  });

  it('rejects a request that can never fit in the KV cache instead of leaving it waiting', async () => {
    const engine = await open(config({ kvCacheBytes: 4 * 2 * 4 * 2 * 4 * 16 * 4 }));
    engine.add(request('huge', prompt(8, 100), 10));
    expect(engine.hasWork()).toBe(false);
    expect(engine.flush().rejections[0]).toMatchObject({ requestId: 'huge', code: 'CONTEXT_LENGTH_EXCEEDED' });
  });
  it('a chunk remainder with a long past and a fresh long prompt run as separate calls and equal each request alone', async () => {
    // 1,200 tokens a step: x's 1,500-token prompt takes the first step whole and leaves a
    // 300-token remainder (past 1,200) for the step where y's 700-token prompt arrives beside z's
    // 3 tokens; call-groups.ts runs the three apart instead of padding all to 700 new after a
    // 1,200 past (one call, without the grouping), then z, x and y decode together.
    const long = [
      { id: 'x', prompt: prompt(11, 1500), max: 4, at: 0 },
      { id: 'z', prompt: prompt(13, 3), max: 10, at: 0 },
      { id: 'y', prompt: prompt(12, 700), max: 5, at: 1 },
    ];
    const expected = new Map<string, number[]>();
    for (const c of long) expected.set(c.id, await greedy(session, ort, c.prompt, c.max));
    const engine = await open(config({ maxNumBatchedTokens: 1200, maxModelLen: 2048, kvCacheBytes: 16 << 20 }));
    const arrivals = new Map<number, GenerateRequest[]>();
    for (const c of long) arrivals.set(c.at, [...(arrivals.get(c.at) ?? []), request(c.id, c.prompt, c.max)]);
    const callsPerStep: number[] = [];
    const { tokens } = await drive(engine, arrivals, () => callsPerStep.push(engine.runnerStats.lastStepCalls));
    for (const c of long) expect(tokens.get(c.id), c.id).toEqual(expected.get(c.id));
    // The native runner pads nothing, so every step is one pass: a session call per segment (numLayers + 1).
    expect(Math.max(...callsPerStep)).toBe(kind === 'paged-native' ? engine.info.shape.numLayers + 1 : 3);
  }, 120_000);
});
