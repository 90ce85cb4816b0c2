// Speculative decoding for grammar-constrained rows, with the real tiny decoder on the native
// paged kernel and the real grammar worker: n-gram proposals are checked under the grammar's
// mask at every proposed position (masks computed on the grammar worker during the forward pass,
// the matcher rolled back to what it held, then caught up over what the check kept). A greedy
// constrained row gives exactly its tokens without speculation, so does a seeded sampled one and
// one asking for logprobs (with the same logprobs), and every output is valid under its grammar.
// The random-weight model under an integer-array schema repeats itself, so proposals hold.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest, GrammarSpec, SamplingParams, StepOutput, TokenLogprob } from '../../../src/contracts/generate.js';
import type { TextTokenizer } from '../../../src/contracts/tokenizer.js';
import { EngineCore, type EngineConfig } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { createTokenizer, readModelFiles } from '../../../src/tokenizer/model-files.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const VERSION_DIR = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
const IM_END = 151_645;
const INTEGERS: GrammarSpec = {
  kind: 'json_schema',
  schema: '{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"},"minItems":3,"maxItems":40}},"required":["a"],"additionalProperties":false}',
};
const CHOICES: GrammarSpec = { kind: 'choice', choices: ['yes yes yes yes', 'no no no no no', 'maybe'] };
const prompt = (seed: number, length: number) => Array.from({ length }, (_, i) => (seed * 7919 + i * 104_729) % 150_000);

const request = (id: string, promptIds: number[], grammar: GrammarSpec, sampling: Partial<SamplingParams> = {}): GenerateRequest => ({
  id,
  promptTokenIds: promptIds,
  sampling: { ...GREEDY_SAMPLING, ...sampling },
  priority: 0,
  cacheSalt: null,
  stop: { maxTokens: 160, minTokens: 0, eosTokenIds: [IM_END], ignoreEos: false, stopTokenIds: [] },
  grammar,
});

const config = (speculative: boolean): EngineConfig => ({
  modelPath: join(VERSION_DIR, 'onnx', 'model_paged.segments'),
  device: 'cpu',
  intraOpNumThreads: 1,
  maxNumSeqs: 8,
  maxNumBatchedTokens: 64,
  maxModelLen: 512,
  blockSize: 4,
  kvCacheBytes: 4 << 20,
  enablePrefixCaching: true,
  sampleableVocabSize: 151_669,
  tokenizerPath: join(VERSION_DIR, 'tokenizer.json'),
  ...(speculative ? { speculative: { method: 'ngram', numSpeculativeTokens: 4, promptLookupMin: 1, promptLookupMax: 3, disableByBatchSize: 8 } } : {}),
});

interface Run {
  readonly tokens: Map<string, number[]>;
  readonly logprobs: Map<string, TokenLogprob[]>;
  readonly reasons: Map<string, string | null>;
  readonly outputs: StepOutput[];
}

async function run(speculative: boolean, requests: readonly GenerateRequest[]): Promise<Run> {
  const c = config(speculative);
  const engine = EngineCore.create(c, await openModelRunner(c), () => {});
  const result: Run = { tokens: new Map(), logprobs: new Map(), reasons: new Map(), outputs: [] };
  try {
    for (const r of requests) engine.add(r);
    for (let step = 0; engine.hasWork(); step++) {
      expect(step).toBeLessThan(2_000);
      const output = await engine.step();
      expect(output.rejections).toEqual([]);
      result.outputs.push(output);
      for (const u of output.updates) {
        result.tokens.set(u.requestId, [...(result.tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
        if (u.logprobs) result.logprobs.set(u.requestId, [...(result.logprobs.get(u.requestId) ?? []), ...u.logprobs]);
        result.reasons.set(u.requestId, u.finishReason);
      }
      engine.checkIntegrity();
    }
  } finally {
    await engine.release();
  }
  return result;
}

let tokenizer: TextTokenizer;
beforeAll(async () => {
  tokenizer = createTokenizer(await readModelFiles(VERSION_DIR));
});
/** The output's text without its final stop token. */
const text = (ids: readonly number[]): string =>
  tokenizer.decode(
    ids.filter((id) => id !== IM_END),
    { skip_special_tokens: false },
  );

describe('speculative decoding of grammar-constrained rows', () => {
  it('gives greedy, seeded sampled and logprobs rows their tokens without speculation, valid under their grammar, with proposals accepted', async () => {
    const requests = [
      request('greedy-json', prompt(1, 9), INTEGERS),
      request('greedy-json-2', prompt(2, 5), INTEGERS),
      request('choice', prompt(3, 7), CHOICES),
      request('sampled-json', prompt(4, 6), INTEGERS, { temperature: 0.5, topK: 8, seed: 5 }),
      request('logprobs-json', prompt(5, 8), INTEGERS, { logprobs: true, topLogprobs: 1, frequencyPenalty: 0.05 }),
    ];
    const without = await run(false, requests);
    const withSpec = await run(true, requests);
    expect(withSpec.tokens).toEqual(without.tokens);
    expect(withSpec.reasons).toEqual(without.reasons);
    for (const [id, logprobs] of withSpec.logprobs) {
      const plain = without.logprobs.get(id)!;
      expect(logprobs.map((l) => l.tokenId)).toEqual(plain.map((l) => l.tokenId));
      logprobs.forEach((l, i) => expect(l.logprob, `${id} ${i}`).toBeCloseTo(plain[i]!.logprob, 3));
    }
    for (const r of requests) {
      const output = text(withSpec.tokens.get(r.id)!);
      if (r.grammar === CHOICES) expect(['yes yes yes yes', 'no no no no no', 'maybe']).toContain(output);
      else {
        const value = JSON.parse(output) as { a: unknown[] };
        expect(Object.keys(value)).toEqual(['a']);
        for (const item of value.a) expect(Number.isInteger(item), output).toBe(true);
      }
    }
    const final = withSpec.outputs.flatMap((o) => o.updates).filter((u) => u.finishReason !== null);
    const accepted = (id: string) => final.find((u) => u.requestId === id)!.specDecode?.numAcceptedTokens ?? 0;
    for (const id of ['greedy-json', 'greedy-json-2', 'logprobs-json', 'choice']) expect(accepted(id), id).toBeGreaterThan(0);
    // No more steps for the same tokens (the longest row may be one whose proposals fail).
    expect(withSpec.outputs.length).toBeLessThanOrEqual(without.outputs.length);
  }, 180_000);
});
