// Prompt logprobs on the engine side: the scheduler computes such a prompt in full (no prefix
// hit) with `allLogits` chunks until the first token; the collector turns each chunk's rows into
// per-position logprobs (ranked, with alternatives) and hands the list out with the first token.
import { afterEach, describe, expect, it } from 'vitest';
import type { GenerateRequest, StepOutput, StepPlan } from '../../../src/contracts/generate.js';
import { PromptLogprobs } from '../../../src/engine-worker/prompt-logprobs.js';
import { LogprobTable, tokenLogprobIn } from '../../../src/sampler/logprobs.js';
import { checkTrackedIntegrity, harness, makeRequest } from '../../support/fake-model.js';

afterEach(checkTrackedIntegrity);

const seq = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const withPromptLogprobs = (request: GenerateRequest, k: number): GenerateRequest => ({ ...request, promptLogprobs: k });

describe('tokenLogprobIn', () => {
  it("gives the token's log-softmax, its rank, and the best alternatives over the sampleable ids", () => {
    const row = Float32Array.from([0, 2, 1, 3, 50]); // id 4 is past the sampleable vocabulary
    const lse = Math.log(1 + Math.exp(2) + Math.exp(1) + Math.exp(3));
    const lp = tokenLogprobIn(row, 4, 2, 2, new LogprobTable());
    expect(lp.tokenId).toBe(2);
    expect(lp.logprob).toBeCloseTo(1 - lse, 5);
    expect(lp.rank).toBe(3);
    expect(lp.top.map((t) => t.tokenId)).toEqual([3, 1]);
    expect(lp.top[0]!.logprob).toBeCloseTo(3 - lse, 5);
    expect(tokenLogprobIn(row, 4, 3, 0, new LogprobTable())).toMatchObject({ rank: 1, top: [] });
  });
});

describe('the scheduler with prompt logprobs', () => {
  it('computes a cached prompt again, chunk by chunk with allLogits, and stops asking after the first token', () => {
    const h = harness({ numBlocks: 64, blockSize: 4, maxNumBatchedTokens: 8 });
    const prompt = seq(12);
    h.scheduler.add(makeRequest('warm', prompt, { maxTokens: 1 }));
    while (h.scheduler.hasUnfinished()) h.scheduler.apply(h.runner.execute(h.scheduler.schedule()));
    h.scheduler.add(withPromptLogprobs(makeRequest('lp', prompt, { maxTokens: 2 }), 1));
    const plans: StepPlan[] = [];
    while (h.scheduler.hasUnfinished()) {
      const plan = h.scheduler.schedule();
      plans.push(plan);
      h.scheduler.apply(h.runner.execute(plan));
    }
    const rows = plans.map((p) => p.scheduled[0]!);
    expect(rows.map((r) => [r.numComputedTokens, r.tokenIds.length, r.allLogits ?? false])).toEqual([
      [0, 8, true],
      [8, 4, true],
      [12, 1, false],
    ]);
    // A request without prompt logprobs still hits the cache.
    h.scheduler.add(makeRequest('hit', prompt, { maxTokens: 1 }));
    const hit = h.scheduler.schedule().scheduled[0]!;
    expect(hit.numComputedTokens).toBe(8);
    expect(hit.allLogits).toBeUndefined();
    h.scheduler.abort('hit', 'abort');
  });
});

describe('PromptLogprobs', () => {
  const vocab = 4;
  /** Rows for `count` positions: position p favours token (p + 1) % vocab. */
  const rows = (from: number, count: number): Float32Array => {
    const out = new Float32Array(count * vocab);
    for (let k = 0; k < count; k++) out[k * vocab + ((from + k + 1) % vocab)] = 5;
    return out;
  };
  const request = withPromptLogprobs(makeRequest('r', [0, 1, 2, 3, 0]), 1);
  const chunk = (numComputedTokens: number, count: number, sample: boolean): StepPlan => ({
    stepId: 0,
    scheduled: [{ requestId: 'r', tokenIds: request.promptTokenIds.slice(numComputedTokens, numComputedTokens + count), numComputedTokens, blockTable: [], sample, isNew: false, allLogits: true }],
    numScheduledTokens: count,
    releasedRequestIds: [],
    blocksToCopy: [],
  });
  const stats = { numRunning: 1, numWaiting: 0, kvCacheUsage: 0, numTotalBlocks: 1, numFreeBlocks: 1, prefixCacheQueries: 0, prefixCacheHits: 0, numPreemptions: 0 };
  const output = (newTokenIds: number[], finishReason: 'abort' | null = null): StepOutput => ({
    stepId: 0,
    timeMs: 0,
    rejections: [],
    stats,
    updates: [
      {
        requestId: 'r',
        newTokenIds,
        logprobs: null,
        finishReason,
        stopTokenId: null,
        numPromptTokens: 5,
        numOutputTokens: newTokenIds.length,
        numCachedTokens: 0,
        numPreemptions: 0,
        arrivalTimeMs: 0,
        scheduledTimeMs: 0,
        firstTokenTimeMs: null,
      },
    ],
  });

  it('fills positions across chunks (the row at p scores token p + 1) and attaches them to the first token', () => {
    const collector = new PromptLogprobs(vocab, vocab);
    collector.collect(chunk(0, 3, false), new Map([['r', rows(0, 3)]]), () => request);
    expect(collector.attach(output([])).updates[0]!.promptLogprobs).toBeUndefined();
    collector.collect(chunk(3, 2, true), new Map([['r', rows(3, 2)]]), () => request);
    const list = collector.attach(output([7])).updates[0]!.promptLogprobs!;
    expect(list).toHaveLength(5);
    expect(list[0]).toBeNull();
    for (let p = 1; p < 5; p++) expect(list[p]).toMatchObject({ tokenId: request.promptTokenIds[p], rank: 1, top: [{ tokenId: request.promptTokenIds[p] }] });
    expect(list[1]!.logprob).toBeCloseTo(5 - Math.log(Math.exp(5) + 3), 5);
    // Handed out once.
    expect(collector.attach(output([8])).updates[0]!.promptLogprobs).toBeUndefined();
  });

  it('forgets a request that ends before its first token', () => {
    const collector = new PromptLogprobs(vocab, vocab);
    collector.collect(chunk(0, 3, false), new Map([['r', rows(0, 3)]]), () => request);
    expect(collector.attach(output([], 'abort')).updates[0]!.promptLogprobs).toBeUndefined();
    collector.collect(chunk(3, 2, true), new Map([['r', rows(3, 2)]]), () => request);
    expect(collector.attach(output([1])).updates[0]!.promptLogprobs![1]).toBeNull();
  });
});
