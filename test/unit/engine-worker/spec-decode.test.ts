// N-gram speculative decoding in the scheduler loop: proposals (ngram-proposer.ts), their check
// (acceptGreedy), the back-off (NgramDrafts), the KV rollback (KvCacheManager.truncate), and a
// property over random arrival schedules — staggered arrivals, chunked prefill, preemption in
// small pools, prefix hits on shared prompt heads and aborts between schedule and apply — where
// every request's greedy tokens equal the fake model's run alone (so equal to decoding without
// speculation), the pool's integrity holds after every step, and proposals were accepted.

import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { NgramSpeculativeConfig } from '../../../src/contracts/engine-messages.js';
import { GREEDY_SAMPLING, type GenerateRequest, type SampledTokens, type SamplingParams, type StepPlan, type StepResult } from '../../../src/contracts/generate.js';
import { proposeNgram } from '../../../src/engine-worker/ngram-proposer.js';
import { acceptGreedy, type DraftSource, MAX_DRAFT_BACKOFF_TOKENS, NgramDrafts, ProposalGate } from '../../../src/engine-worker/spec-decode.js';
import { RequestState } from '../../../src/engine-worker/request-state.js';
import { StepCosts } from '../../../src/engine-worker/step-costs.js';
import { KvCacheManager } from '../../../src/kv-cache/kv-cache-manager.js';
import { Sampler } from '../../../src/sampler/sampler.js';
import { checkTrackedIntegrity, copyingLogits, copyingNextToken, type Harness, harness, makeRequest, randomTokens, referenceOutput, rng, VOCAB } from '../../support/fake-model.js';

afterEach(checkTrackedIntegrity);

const MAX_MODEL_LEN = 1024;
const sampler = new Sampler({ vocabSize: VOCAB });
const drafts = (config: Partial<NgramSpeculativeConfig> = {}) =>
  new NgramDrafts({ method: 'ngram', numSpeculativeTokens: 4, promptLookupMin: 1, promptLookupMax: 3, disableByBatchSize: 64, ...config });

describe('n-gram proposals', () => {
  it('continue the most recent earlier occurrence of the longest suffix that occurred', () => {
    // Suffix [1, 2] occurs at 0 and 4; the most recent (4) is followed by 9, 1, 2.
    expect(proposeNgram([1, 2, 3, 4, 1, 2, 9, 1, 2], 1, 3, 3)).toEqual([9, 1, 2]);
    // The 3-token suffix [5, 1, 2] occurred once, followed by 7: preferred to the 2-token match.
    expect(proposeNgram([5, 1, 2, 7, 1, 2, 8, 5, 1, 2], 2, 3, 2)).toEqual([7, 1]);
    // Nothing after the match but the sequence's own end: as many as there are.
    expect(proposeNgram([4, 4], 1, 1, 5)).toEqual([4]);
    expect(proposeNgram([1, 2, 3], 1, 3, 4)).toEqual([]);
    expect(proposeNgram([1, 2, 1, 2], 3, 3, 4)).toEqual([]);
    expect(proposeNgram([1, 2, 1], 1, 2, 0)).toEqual([]);
  });

  it('a check keeps the proposals up to the first disagreement, then the target model’s own token', () => {
    expect(acceptGreedy([5, 6, 7], [5, 6, 7, 8])).toEqual([5, 6, 7, 8]);
    expect(acceptGreedy([5, 6, 7], [5, 9, 7, 8])).toEqual([5, 9]);
    expect(acceptGreedy([5, 6, 7], [1, 6, 7, 8])).toEqual([1]);
    expect(() => acceptGreedy([5], [5])).toThrow(/expected one more/);
  });

  it('requests outside a thinking block propose, and failed drafts back off', () => {
    const state = new RequestState(makeRequest('a', [1, 2, 3, 1, 2]), 0, 0);
    const source = drafts({ disableByBatchSize: 4 });
    expect(source.propose(state, 4, 8)).toEqual({ tokens: [3, 1, 2] });
    // Sampled, penalised and min_tokens rows propose too: the sampler's acceptance rule checks them (test/unit/sampler/acceptance.test.ts).
    const sampled = new RequestState({ ...makeRequest('b', [1, 2, 3, 1, 2]), sampling: { ...GREEDY_SAMPLING, temperature: 0.7 } }, 1, 0);
    expect(source.propose(sampled, 1, 8)).toEqual({ tokens: [3, 1, 2] });
    const penalised = new RequestState({ ...makeRequest('c', [1, 2, 3, 1, 2]), sampling: { ...GREEDY_SAMPLING, repetitionPenalty: 1.2, logprobs: true } }, 2, 0);
    expect(source.propose(penalised, 1, 8)).toEqual({ tokens: [3, 1, 2] });
    expect(source.propose(new RequestState(makeRequest('e', [1, 2, 3, 1, 2], { minTokens: 2 }), 4, 0), 1, 8)).toEqual({ tokens: [3, 1, 2] });
    // A thinking block's closing tokens are decided a token at a time: no proposals.
    const thinking = new RequestState({ ...makeRequest('d', [1, 2, 3, 1, 2]), thinking: { endTokenIds: [9], startsInside: true, startTokenIds: [], budget: null } }, 3, 0);
    expect(source.propose(thinking, 1, 8)).toBeNull();

    // A draft that fails entirely pauses the sequence 1, 2, 4, … of its tokens; any accepted token resets it.
    source.verified(state, 3, 0);
    expect(source.propose(state, 1, 8)).toBeNull();
    state.tokenIds.push(3);
    expect(source.propose(state, 1, 8)).not.toBeNull();
    for (let i = 0; i < 10; i++) source.verified(state, 3, 0);
    for (let i = 0; i < MAX_DRAFT_BACKOFF_TOKENS; i++) state.tokenIds.push(1);
    expect(source.propose(state, 1, 8)).not.toBeNull();
    source.verified(state, 3, 1);
    expect(source.propose(state, 1, 8)).not.toBeNull();
  });
});

describe('proposals past disable_by_batch_size', () => {
  const copying = (id: string) => new RequestState(makeRequest(id, [1, 2, 3, 1, 2]), 0, 0);

  it('go on while drafts give most of a full draft, and pause 8, 16, … tokens while they give less', () => {
    const source = drafts({ disableByBatchSize: 4 });
    const good = copying('good');
    expect(source.propose(good, 32, 8)).toEqual({ tokens: [3, 1, 2] });
    source.verified(good, 4, 4);
    expect(source.propose(good, 32, 8)).not.toBeNull();

    const poor = copying('poor');
    source.verified(poor, 4, 1);
    expect(source.propose(poor, 32, 8)).toBeNull();
    // Within the limit only a draft that failed entirely pauses.
    expect(source.propose(poor, 4, 8)).not.toBeNull();
    for (let i = 0; i < 8; i++) {
      expect(source.propose(poor, 32, 8)).toBeNull();
      poor.tokenIds.push(3);
    }
    expect(source.propose(poor, 32, 8)).not.toBeNull();
    // The running mean (1 → 2.5 → 3.25 accepted a draft) reaches 0.75 × 4 on the second full draft.
    source.verified(poor, 4, 4);
    for (let i = 0; i < 16; i++) {
      expect(source.propose(poor, 32, 8)).toBeNull();
      poor.tokenIds.push(1);
    }
    expect(source.propose(poor, 32, 8)).not.toBeNull();
    source.verified(poor, 4, 4);
    expect(source.propose(poor, 32, 8)).not.toBeNull();
    // A short draft, even fully held, gives too little: 3.25 → 2.1 a draft pauses it again.
    source.verified(poor, 1, 1);
    expect(source.propose(poor, 32, 8)).toBeNull();
  });

  it('pause where this engine measures their rows costing more than they yield, and probe now and then', () => {
    const costs = new StepCosts();
    const gate = new ProposalGate(4, 4, true, costs);
    const state = copying('costly');
    // Nothing measured yet: drafts go on, and measure.
    expect(gate.allows(state, 1)).toBe(true);
    costs.observe(1, 1);
    costs.observe(5, 3);
    // Its yield is weighed once four drafts were checked (one draft says little).
    for (let i = 0; i < 3; i++) {
      gate.verified(state, 4, 1);
      expect(gate.allows(state, 1)).toBe(true);
    }
    gate.verified(state, 4, 1);
    costs.observe(5, 1.5);
    costs.observe(5, 1.5);
    // A 5-row verify step costs 1.5 decode steps; 1 + 1 accepted pays.
    expect(gate.allows(state, 1)).toBe(true);
    costs.observe(5, 3);
    costs.observe(5, 3);
    // At 3×, 2 tokens a draft no longer pay: it pauses 8 of its tokens…
    expect(gate.allows(state, 1)).toBe(false);
    const grow = (n: number) => state.tokenIds.push(...Array.from({ length: n }, () => 1));
    grow(7);
    expect(gate.allows(state, 1)).toBe(false);
    // …then probes once, and the probe's outcome is weighed: a full draft held (5 > 3) resumes it.
    grow(1);
    expect(gate.allows(state, 1)).toBe(true);
    gate.verified(state, 4, 4);
    expect(gate.allows(state, 1)).toBe(true);
    // A failed weighing after a probe pauses twice as long.
    gate.verified(state, 4, 0);
    gate.verified(state, 4, 0);
    gate.verified(state, 4, 0);
    grow(64);
    expect(gate.allows(state, 1)).toBe(false);
    grow(8);
    expect(gate.allows(state, 1)).toBe(true);
    expect(gate.allows(state, 1)).toBe(false);
    grow(15);
    expect(gate.allows(state, 1)).toBe(false);
    grow(1);
    expect(gate.allows(state, 1)).toBe(true);
    // The step it weighs is every running sequence's draft at once: 8 sequences' 40 rows against 8.
    const batch = copying('batch');
    for (let i = 0; i < 4; i++) gate.verified(batch, 4, 3);
    costs.observe(8, 2);
    costs.observe(40, 7);
    expect(gate.allows(batch, 8)).toBe(true);
    costs.observe(40, 10);
    costs.observe(40, 10);
    expect(gate.allows(batch, 8)).toBe(false);
    // Past the batch limit, where even a full draft would not pay (the 40-row step over 5 times the 8-row one), a sequence never weighed makes none, and probes none.
    for (let i = 0; i < 3; i++) costs.observe(40, 11);
    const fresh = copying('fresh');
    expect(gate.allows(fresh, 8)).toBe(false);
    fresh.tokenIds.push(...Array.from({ length: 200 }, () => 1));
    expect(gate.allows(fresh, 8)).toBe(false);
    expect(gate.allows(fresh, 1)).toBe(true);
  });

  it('never come from a draft model, whose own steps the rule does not weigh', () => {
    const gate = new ProposalGate(4, 4, false);
    const state = copying('draft');
    expect(gate.allows(state, 4)).toBe(true);
    expect(gate.allows(state, 5)).toBe(false);
    gate.verified(state, 4, 4);
    expect(gate.allows(state, 32)).toBe(false);
  });
});

describe('KvCacheManager.truncate', () => {
  it('gives back the blocks past the kept positions and refuses to drop a published block', () => {
    const kv = new KvCacheManager({ numBlocks: 8, blockSize: 4 });
    const tokens = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(kv.allocate('a', 10, kv.lookupPrefix(tokens, null))).toBe(true);
    kv.commitComputed('a', tokens, 8);
    expect(kv.blockTable('a')).toHaveLength(3);
    kv.truncate('a', 9);
    expect(kv.blockTable('a')).toHaveLength(3);
    kv.truncate('a', 8);
    expect(kv.blockTable('a')).toHaveLength(2);
    expect(kv.numFreeBlocks).toBe(6);
    kv.checkIntegrity();
    expect(() => kv.truncate('a', 4)).toThrow(/would drop published block 1 of 2/);
    expect(kv.blockTable('a')).toHaveLength(2);
    kv.checkIntegrity();
  });
});

interface Arrival {
  readonly step: number;
  readonly request: GenerateRequest;
}

/** Requests whose prompts repeat themselves (copy-heavy), some sharing a head (prefix hits). */
function copyHeavyWorkload(seed: number, numRequests: number): Arrival[] {
  const next = rng(seed);
  const head = randomTokens(next, 9).map((t) => t % 40);
  return Array.from({ length: numRequests }, (_, i) => {
    const body = randomTokens(next, 2 + next(10)).map((t) => t % 40);
    const prompt = [...(next(2) === 0 ? head : []), ...body, ...body, ...body.slice(0, 1 + next(body.length))];
    return { step: next(16), request: makeRequest(`r${i}`, prompt, { maxTokens: 1 + next(40), stopTokenIds: next(3) === 0 ? [7] : [] }) };
  });
}

describe('speculative decoding in the scheduler loop (property)', () => {
  it('gives every request exactly its greedy tokens under random schedules, pools, budgets and aborts', () => {
    let accepted = 0;
    let proposed = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.record({
          maxNumSeqs: fc.integer({ min: 1, max: 8 }),
          maxNumBatchedTokens: fc.integer({ min: 2, max: 40 }),
          numBlocks: fc.constantFrom(22, 32, 64, 512),
          enablePrefixCaching: fc.boolean(),
          numSpeculativeTokens: fc.integer({ min: 1, max: 6 }),
          promptLookupMin: fc.integer({ min: 1, max: 2 }),
          promptLookupMax: fc.integer({ min: 2, max: 4 }),
          disableByBatchSize: fc.integer({ min: 1, max: 8 }),
          abortEvery: fc.constantFrom(0, 7),
        }),
        (seed, { numBlocks, enablePrefixCaching, numSpeculativeTokens, promptLookupMin, promptLookupMax, disableByBatchSize, abortEvery, ...config }) => {
          const arrivals = copyHeavyWorkload(seed, 10);
          const h = harness({
            numBlocks,
            enablePrefixCaching,
            maxModelLen: MAX_MODEL_LEN,
            model: copyingNextToken,
            drafts: drafts({ numSpeculativeTokens, promptLookupMin, promptLookupMax, disableByBatchSize }),
            ...config,
          });
          const next = rng(seed ^ 0x2545f491);
          const aborted = new Set<string>();
          const outputs = new Map<string, number[]>();
          const queue = [...arrivals].sort((a, b) => a.step - b.step);
          for (let step = 0; queue.length > 0 || h.scheduler.hasUnfinished(); step++) {
            expect(step).toBeLessThan(5_000);
            while (queue[0] && queue[0].step <= step) h.scheduler.add(queue.shift()!.request);
            const plan = h.scheduler.schedule();
            expect(plan.numScheduledTokens).toBeLessThanOrEqual(config.maxNumBatchedTokens);
            expect(plan.numScheduledTokens).toBe(plan.scheduled.reduce((n, s) => n + s.tokenIds.length, 0));
            for (const s of plan.scheduled) {
              // Proposals are written only into blocks this request alone holds.
              for (const b of s.blockTable.slice(Math.floor(s.numComputedTokens / h.kv.blockSize))) expect(h.kv.refCount(b)).toBe(1);
            }
            const result = h.runner.execute(plan);
            const victims = abortEvery > 0 ? plan.scheduled.filter(() => next(abortEvery) === 0).map((s) => s.requestId) : [];
            for (const id of victims) {
              h.scheduler.abort(id);
              aborted.add(id);
            }
            const output = h.scheduler.apply(result);
            if (output.specDecode) {
              accepted += output.specDecode.numAcceptedTokens;
              proposed += output.specDecode.numDraftTokens;
              expect(output.specDecode.acceptedPerPosition.reduce((a, b) => a + b, 0)).toBe(output.specDecode.numAcceptedTokens);
            }
            for (const u of output.updates) outputs.set(u.requestId, [...(outputs.get(u.requestId) ?? []), ...u.newTokenIds]);
            h.kv.checkIntegrity();
          }
          expect(h.kv.numFreeBlocks).toBe(h.kv.numTotalBlocks);
          for (const { request } of arrivals) {
            const expected = referenceOutput(request, MAX_MODEL_LEN, copyingNextToken);
            const got = outputs.get(request.id) ?? [];
            if (aborted.has(request.id)) expect(expected.slice(0, got.length), request.id).toEqual(got);
            else expect(got, request.id).toEqual(expected);
          }
        },
      ),
      { numRuns: 150 },
    );
    // The workload copies: many proposals were made and a good share held (measured: 18%).
    expect(proposed).toBeGreaterThan(1000);
    expect(accepted / proposed).toBeGreaterThan(0.1);
  });

  /** A request's sampling: seeded and unseeded draws under temperature, top_k / top_p / min_p, penalties, bias; and greedy with penalties. */
  const samplingFor = (next: (n: number) => number, i: number): SamplingParams => {
    const choices: SamplingParams[] = [
      { ...GREEDY_SAMPLING, temperature: 1, seed: 1000 + i },
      { ...GREEDY_SAMPLING, temperature: 0.7, topK: 12, topP: 0.9, seed: i },
      { ...GREEDY_SAMPLING, temperature: 1.2, minP: 0.05, frequencyPenalty: 0.4, presencePenalty: 0.2, repetitionPenalty: 1.1, logitBias: { 5: 2 } },
      { ...GREEDY_SAMPLING, repetitionPenalty: 1.3, logprobs: true, topLogprobs: 2 },
    ];
    return choices[next(choices.length)]!;
  };

  /** The step sampled as EngineCore samples it: Sampler.verify over each row's logits (a plain row is a check of no proposals). */
  function sampleStep(h: Harness, plan: StepPlan): StepResult {
    const entries = new Map(plan.scheduled.map((entry) => [entry.requestId, entry]));
    const sampled = [...h.runner.rowContexts(plan)].map(([requestId, rows]): SampledTokens => {
      const state = h.scheduler.get(requestId)!;
      const { request } = state;
      const entry = entries.get(requestId)!;
      const logits = new Float32Array(rows.length * VOCAB);
      rows.forEach((context, i) => logits.set(copyingLogits(context), i * VOCAB));
      const result = sampler.verify({
        requestId,
        params: request.sampling,
        promptTokenIds: request.promptTokenIds,
        outputTokenIds: state.tokenIds.slice(state.numPromptTokens),
        bannedTokenIds: [...request.stop.eosTokenIds, ...request.stop.stopTokenIds],
        banUntil: request.stop.minTokens,
        logits,
        drafts: entry.tokenIds.slice(entry.tokenIds.length - (entry.numDraftTokens ?? 0)),
      });
      return { requestId, tokenIds: result.tokenIds, logprobs: result.logprobs };
    });
    return { stepId: plan.stepId, sampled };
  }

  /** What a sampled request decodes run alone, a token a step, without speculation. */
  function sampledReference(request: GenerateRequest): number[] {
    const { promptTokenIds, sampling, stop } = request;
    const model = (context: readonly number[]): number => {
      const output = context.slice(promptTokenIds.length);
      const banned = output.length < stop.minTokens ? [...stop.eosTokenIds, ...stop.stopTokenIds] : null;
      return sampler.sample({ requestId: request.id, params: sampling, promptTokenIds, outputTokenIds: output, bannedTokenIds: banned, logits: copyingLogits(context) }).tokenId;
    };
    return referenceOutput(request, MAX_MODEL_LEN, model);
  }

  it('gives sampled requests (seeded or not, any sampling parameter) the tokens they decode alone, whatever they are batched with', () => {
    let accepted = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.record({
          maxNumSeqs: fc.integer({ min: 1, max: 8 }),
          maxNumBatchedTokens: fc.integer({ min: 2, max: 40 }),
          numBlocks: fc.constantFrom(22, 32, 512),
          numSpeculativeTokens: fc.integer({ min: 1, max: 5 }),
          abortEvery: fc.constantFrom(0, 7),
        }),
        (seed, { numBlocks, numSpeculativeTokens, abortEvery, ...config }) => {
          const next = rng(seed ^ 0x6a09e667);
          const arrivals = copyHeavyWorkload(seed, 8).map(({ step, request }, i) => ({
            step,
            request: { ...request, sampling: samplingFor(next, i), stop: { ...request.stop, minTokens: next(3) } },
          }));
          const h = harness({ numBlocks, maxModelLen: MAX_MODEL_LEN, model: copyingNextToken, drafts: drafts({ numSpeculativeTokens, disableByBatchSize: 6 }), ...config });
          const aborted = new Set<string>();
          const outputs = new Map<string, number[]>();
          const queue = [...arrivals].sort((a, b) => a.step - b.step);
          for (let step = 0; queue.length > 0 || h.scheduler.hasUnfinished(); step++) {
            expect(step).toBeLessThan(5_000);
            while (queue[0] && queue[0].step <= step) h.scheduler.add(queue.shift()!.request);
            const plan = h.scheduler.schedule();
            const result = sampleStep(h, plan);
            for (const s of plan.scheduled) {
              if (abortEvery > 0 && next(abortEvery) === 0) {
                h.scheduler.abort(s.requestId);
                aborted.add(s.requestId);
              }
            }
            const output = h.scheduler.apply(result);
            accepted += output.specDecode?.numAcceptedTokens ?? 0;
            for (const u of output.updates) outputs.set(u.requestId, [...(outputs.get(u.requestId) ?? []), ...u.newTokenIds]);
            h.kv.checkIntegrity();
          }
          expect(h.kv.numFreeBlocks).toBe(h.kv.numTotalBlocks);
          for (const { request } of arrivals) {
            const expected = sampledReference(request);
            const got = outputs.get(request.id) ?? [];
            if (aborted.has(request.id)) expect(expected.slice(0, got.length), request.id).toEqual(got);
            else expect(got, request.id).toEqual(expected);
          }
        },
      ),
      { numRuns: 60 },
    );
    // Sampled rows copy less than greedy ones, yet proposals held (measured: 143 tokens).
    expect(accepted).toBeGreaterThan(50);
  });

  it('carries a draft’s q into the plan, refuses a q of another length, and counts a check that ends on a proposal', () => {
    const uniform = () => new Float32Array(VOCAB).fill(1 / VOCAB);
    let probs = [uniform(), uniform()];
    const source: DraftSource = { propose: () => ({ tokens: [5, 6], probs }), verified: () => {} };
    const h = harness({ numBlocks: 64, maxModelLen: MAX_MODEL_LEN, drafts: source });
    const step = (tokens: Record<string, number[]>) => {
      const plan = h.scheduler.schedule();
      return { plan, output: h.scheduler.apply({ stepId: plan.stepId, sampled: Object.entries(tokens).map(([requestId, tokenIds]) => ({ requestId, tokenIds, logprobs: null })) }) };
    };
    h.scheduler.add(makeRequest('r', [1, 2, 3], { maxTokens: 10, stopTokenIds: [6] }));
    step({ r: [4] });
    const plan = h.scheduler.schedule();
    expect(plan.scheduled[0]).toMatchObject({ tokenIds: [4, 5, 6], numDraftTokens: 2 });
    expect(plan.scheduled[0]!.draftProbs).toBe(probs);
    // Both proposals held and the second is a stop token (a grammar's end, say): no token follows it.
    const output = h.scheduler.apply({ stepId: plan.stepId, sampled: [{ requestId: 'r', tokenIds: [5, 6], logprobs: null }] });
    expect(output.specDecode).toMatchObject({ numDraftTokens: 2, numAcceptedTokens: 2, acceptedPerPosition: [1, 1] });
    expect(output.updates[0]).toMatchObject({ newTokenIds: [5, 6], finishReason: 'stop' });

    probs = [uniform()];
    h.scheduler.add(makeRequest('s', [1, 2, 3]));
    step({ s: [4] });
    expect(() => h.scheduler.schedule()).toThrow("1 proposal distributions for request s's 2 proposals");
  });

  it('reports per-request acceptance in its updates and counts proposals in the token budget', () => {
    const request = makeRequest('copy', [3, 4, 5, 6, 3, 4, 5, 6, 3, 4], { maxTokens: 24 });
    const h = harness({ numBlocks: 64, maxModelLen: MAX_MODEL_LEN, model: copyingNextToken, drafts: drafts(), maxNumBatchedTokens: 64 });
    h.scheduler.add(request);
    let last;
    const tokens: number[] = [];
    while (h.scheduler.hasUnfinished()) {
      const plan = h.scheduler.schedule();
      for (const s of plan.scheduled) if (s.numDraftTokens) expect(s.tokenIds).toHaveLength(1 + s.numDraftTokens);
      const output = h.scheduler.apply(h.runner.execute(plan));
      for (const u of output.updates) {
        tokens.push(...u.newTokenIds);
        last = u;
      }
    }
    expect(tokens).toEqual(referenceOutput(request, MAX_MODEL_LEN, copyingNextToken));
    expect(last!.specDecode!.numDrafts).toBeGreaterThan(0);
    expect(last!.specDecode!.numAcceptedTokens).toBeLessThanOrEqual(last!.specDecode!.numDraftTokens);
  });
});
