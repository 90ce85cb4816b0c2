// Grammar-constrained decoding in the engine with the real tiny decoder (random weights, so its
// free text is gibberish): constrained and unconstrained requests share batches; every
// constrained output that finishes with "stop" parses and validates under its schema (ajv);
// unconstrained greedy outputs equal the same request decoded alone; preemption does not break a
// constrained request; prefix-cache hits give the same constrained outputs as recomputing; a
// grammar that cannot compile is a rejection that leaves the KV pool empty.
import * as ort from 'onnxruntime-node';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest, GrammarSpec, SamplingParams, StepOutput } from '../../../src/contracts/generate.js';
import type { TextTokenizer } from '../../../src/contracts/tokenizer.js';
import { EngineCore, type EngineConfig } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { createTokenizer, readModelFiles } from '../../../src/tokenizer/model-files.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { greedy } from '../../support/decoder.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const VERSION_DIR = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
const MODEL = join(VERSION_DIR, 'onnx', 'model.onnx');
const IM_END = 151_645;
const SAMPLING = GREEDY_SAMPLING;
const seeded = (seed: number): SamplingParams => ({ ...SAMPLING, temperature: 1, seed });
const prompt = (seed: number, length: number) => Array.from({ length }, (_, i) => (seed * 7919 + i * 104_729) % 150_000);

const request = (id: string, promptIds: number[], maxTokens: number, options: { grammar?: GrammarSpec; sampling?: SamplingParams; minTokens?: number } = {}): GenerateRequest => ({
  id,
  promptTokenIds: promptIds,
  sampling: options.sampling ?? SAMPLING,
  priority: 0,
  cacheSalt: null,
  stop: { maxTokens, minTokens: options.minTokens ?? 0, eosTokenIds: options.grammar ? [IM_END] : [], ignoreEos: !options.grammar, stopTokenIds: [] },
  ...(options.grammar ? { grammar: options.grammar } : {}),
});

const config = (overrides: Partial<EngineConfig> = {}): EngineConfig => ({
  modelPath: MODEL,
  device: 'cpu',
  intraOpNumThreads: 1,
  maxNumSeqs: 8,
  maxNumBatchedTokens: 32,
  maxModelLen: 512,
  blockSize: 4,
  kvCacheBytes: 4 << 20,
  enablePrefixCaching: true,
  sampleableVocabSize: 151_669,
  tokenizerPath: join(VERSION_DIR, 'tokenizer.json'),
  ...overrides,
});
const open = async (c: EngineConfig, log: (line: string) => void = () => {}): Promise<EngineCore> => EngineCore.create(c, await openModelRunner(c), log);

interface Finished {
  tokens: number[];
  reason: string | null;
  stopTokenId: number | null;
  cachedTokens: number;
}

/** Runs until idle; every request's tokens and finish, and every step's output. */
async function drive(engine: EngineCore, requests: readonly GenerateRequest[]): Promise<{ results: Map<string, Finished>; outputs: StepOutput[] }> {
  for (const r of requests) engine.add(r);
  const results = new Map<string, Finished>();
  const outputs: StepOutput[] = [];
  for (let step = 0; step < 5000 && engine.hasWork(); step++) {
    const output = await engine.step();
    outputs.push(output);
    for (const u of output.updates) {
      const r = results.get(u.requestId) ?? { tokens: [], reason: null, stopTokenId: null, cachedTokens: 0 };
      r.tokens.push(...u.newTokenIds);
      r.reason = u.finishReason;
      r.stopTokenId = u.stopTokenId;
      r.cachedTokens = u.numCachedTokens;
      results.set(u.requestId, r);
    }
    engine.checkIntegrity();
  }
  return { results, outputs };
}

const SCHEMA = {
  type: 'object',
  properties: { ok: { type: 'boolean' }, size: { type: 'string', enum: ['s', 'm', 'l'] }, n: { type: 'integer', minimum: 0, maximum: 9 } },
  required: ['ok', 'size', 'n'],
  additionalProperties: false,
};
const SCHEMA_SPEC: GrammarSpec = { kind: 'json_schema', schema: JSON.stringify(SCHEMA) };
const validate = new Ajv().compile(SCHEMA);

let tokenizer: TextTokenizer;
let session: ort.InferenceSession;

beforeAll(async () => {
  tokenizer = createTokenizer(await readModelFiles(VERSION_DIR));
  session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
}, 120_000);

/** The text of a finished constrained output, without the stop token that ended it. */
const textOf = (r: Finished): string => tokenizer.decode(r.stopTokenId === null ? r.tokens : r.tokens.slice(0, -1), { skip_special_tokens: false });

/** Asserts a finished constrained output: "stop" outputs are valid, "length" ones are a prefix of the grammar's language (unchecked). */
function expectValidJson(r: Finished | undefined): void {
  expect(r).toBeDefined();
  expect(['stop', 'length']).toContain(r!.reason);
  if (r!.reason !== 'stop') return;
  expect(r!.stopTokenId).toBe(IM_END);
  const value = JSON.parse(textOf(r!)) as unknown;
  expect(validate(value), `${textOf(r!)}: ${JSON.stringify(validate.errors)}`).toBe(true);
}

describe('grammar-constrained decoding in the engine', () => {
  it('constrained and unconstrained requests in one batch: constrained outputs valid, unconstrained greedy unchanged', async () => {
    const engine = await open(config());
    const free = [request('free-a', prompt(1, 7), 10), request('free-b', prompt(2, 30), 12)];
    const constrained = Array.from({ length: 6 }, (_, i) => request(`json-${i}`, prompt(10 + i, 5 + i), 60, { grammar: SCHEMA_SPEC, sampling: seeded(100 + i), minTokens: 3 }));
    const choice = request('choice', prompt(20, 6), 20, { grammar: { kind: 'choice', choices: ['yes', 'no', 'maybe'] } });
    const regex = request('regex', prompt(21, 6), 20, { grammar: { kind: 'regex', pattern: '[a-c]{2}-[0-9]{3}' }, sampling: seeded(7) });
    const { results, outputs } = await drive(engine, [...free, ...constrained, choice, regex]);

    for (const r of free) expect(results.get(r.id)?.tokens).toEqual(await greedy(session, ort, [...r.promptTokenIds], r.stop.maxTokens));
    for (const r of constrained) expectValidJson(results.get(r.id));
    expect(constrained.filter((r) => results.get(r.id)?.reason === 'stop').length).toBeGreaterThan(3);
    expect(results.get('choice')?.reason).toBe('stop');
    expect(['yes', 'no', 'maybe']).toContain(textOf(results.get('choice')!));
    expect(results.get('regex')?.reason).toBe('stop');
    expect(textOf(results.get('regex')!)).toMatch(/^[a-c]{2}-[0-9]{3}$/);

    const masked = outputs.filter((o) => o.grammarMasks);
    expect(masked.length).toBeGreaterThan(0);
    const { masks, maskMs } = engine.grammarStats();
    console.log(`grammar masks: ${masks} in ${masked.length} steps, ${(maskMs / masks).toFixed(3)} ms per mask, ${(maskMs / masked.length).toFixed(3)} ms per masked step`);
    expect(engine.stats().kvCacheUsage).toBe(0);
    await engine.release();
  }, 300_000);

  it('a constrained request stays valid through preemption by a small KV pool', async () => {
    const logs: string[] = [];
    // 16 blocks of 4 tokens (2 kv × 4 layers × 2 heads × 4 positions × 16 dims × 4 bytes each):
    // room for the longest request alone, not for all of them at once.
    const engine = await open(config({ kvCacheBytes: 16 * 2 * 4 * 2 * 4 * 16 * 4, maxNumBatchedTokens: 16 }), (l) => logs.push(l));
    const requests = [
      // Admitted last, the constrained requests are the preemption victims.
      request('pre-free', prompt(32, 20), 30),
      request('pre-json-0', prompt(30, 24), 40, { grammar: SCHEMA_SPEC, sampling: seeded(1) }),
      request('pre-json-1', prompt(31, 22), 40, { grammar: SCHEMA_SPEC, sampling: seeded(2) }),
    ];
    const { results } = await drive(engine, requests);
    expect(logs.some((l) => /preempted request pre-json/.test(l))).toBe(true);
    expectValidJson(results.get('pre-json-0'));
    expectValidJson(results.get('pre-json-1'));
    expect(results.get('pre-free')?.tokens).toEqual(await greedy(session, ort, prompt(32, 20), 30));
    expect(engine.stats().kvCacheUsage).toBe(0);
    await engine.release();
  }, 300_000);

  it('constrained requests hitting the prefix cache: cached tokens > 0, outputs valid and equal to the uncached ones', async () => {
    const shared = prompt(50, 48);
    const first = request('prefix-first', [...shared, 11, 12, 13], 60, { grammar: SCHEMA_SPEC, sampling: seeded(3) });
    // Later requests share the 48-token prefix (12 full blocks); one continues the first's own output, as a next turn would.
    const later = (firstOutput: readonly number[]) => [
      request('prefix-json', [...shared, 21, 22], 60, { grammar: SCHEMA_SPEC }),
      request('prefix-choice', [...shared, 31], 20, { grammar: { kind: 'choice', choices: ['yes', 'no', 'maybe'] } }),
      request('prefix-turn', [...first.promptTokenIds, ...firstOutput, 41], 20, { grammar: { kind: 'regex', pattern: '[a-c]{2}-[0-9]{3}' } }),
    ];
    const engine = await open(config());
    const before = await drive(engine, [first]);
    expectValidJson(before.results.get('prefix-first'));
    const requests = later(before.results.get('prefix-first')!.tokens);
    const cached = (await drive(engine, requests)).results;
    await engine.release();
    const uncachedEngine = await open(config({ enablePrefixCaching: false }));
    const uncached = (await drive(uncachedEngine, requests)).results;
    await uncachedEngine.release();

    for (const r of requests) {
      expect(cached.get(r.id)?.cachedTokens, r.id).toBeGreaterThanOrEqual(48);
      expect(uncached.get(r.id)?.cachedTokens, r.id).toBe(0);
      // Greedy: the cached KV must steer the masked sampler exactly as recomputed KV does.
      expect(cached.get(r.id)?.tokens, r.id).toEqual(uncached.get(r.id)?.tokens);
    }
    expectValidJson(cached.get('prefix-json'));
    expect(cached.get('prefix-choice')?.reason).toBe('stop');
    expect(['yes', 'no', 'maybe']).toContain(textOf(cached.get('prefix-choice')!));
    expect(cached.get('prefix-turn')?.reason).toBe('stop');
    expect(textOf(cached.get('prefix-turn')!)).toMatch(/^[a-c]{2}-[0-9]{3}$/);
  }, 300_000);

  it('a grammar that cannot compile is rejected as INVALID_ARG; the engine carries on and holds no blocks', async () => {
    const engine = await open(config());
    const bad = request('bad', prompt(40, 5), 10, { grammar: { kind: 'ebnf', grammar: 'root ::= undefined_rule' } });
    const good = request('good', prompt(41, 5), 6);
    engine.add(bad);
    engine.add(good);
    const rejections: StepOutput['rejections'][number][] = [];
    for (let step = 0; step < 100 && engine.hasWork(); step++) rejections.push(...(await engine.step()).rejections);
    rejections.push(...engine.flush().rejections);
    expect(rejections).toHaveLength(1);
    expect(rejections[0]).toMatchObject({ requestId: 'bad', code: 'INVALID_ARG' });
    expect(rejections[0]!.message).toMatch(/EBNF grammar cannot be compiled/);
    expect(engine.stats().kvCacheUsage).toBe(0);
    expect(engine.stats().numRunning + engine.stats().numWaiting).toBe(0);
    await engine.release();
  }, 120_000);
});
