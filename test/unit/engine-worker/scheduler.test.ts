import { afterEach, describe, expect, it } from 'vitest';
import type { StepOutput, StepPlan } from '../../../src/contracts/generate.js';
import type { PreemptionEvent } from '../../../src/engine-worker/scheduler.js';
import { ConveyorError } from '../../../src/errors.js';
import { EOS, type Harness, checkTrackedIntegrity, harness, makeRequest, referenceOutput, runToCompletion } from '../../support/fake-model.js';

afterEach(checkTrackedIntegrity);

const seq = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);
const thrown = (fn: () => void): unknown => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
};
const tokensOf = (plan: StepPlan) => Object.fromEntries(plan.scheduled.map((s) => [s.requestId, s.tokenIds.length]));

/** One step through the fake runner; `force` replaces the sampled token of some requests. */
function step(h: Harness, force: Record<string, number> = {}): { plan: StepPlan; out: StepOutput } {
  const plan = h.scheduler.schedule();
  const result = h.runner.execute(plan);
  const sampled = result.sampled.map((s) => (s.requestId in force ? { ...s, tokenIds: [force[s.requestId]!] } : s));
  const out = h.scheduler.apply({ ...result, sampled });
  h.kv.checkIntegrity();
  return { plan, out };
}

describe('Scheduler: chunked prefill and interleaving', () => {
  it('prefills a long prompt in budget-sized chunks and samples only after the last one', () => {
    const h = harness({ numBlocks: 64, maxNumBatchedTokens: 16 });
    h.scheduler.add(makeRequest('long', seq(50), { maxTokens: 2 }));
    const plans = [step(h), step(h), step(h), step(h)].map((s) => s.plan.scheduled[0]!);
    expect(plans.map((p) => p.tokenIds.length)).toEqual([16, 16, 16, 2]);
    expect(plans.map((p) => p.numComputedTokens)).toEqual([0, 16, 32, 48]);
    expect(plans.map((p) => p.sample)).toEqual([false, false, false, true]);
    expect(plans.map((p) => p.isNew)).toEqual([true, false, false, false]);
    expect(h.scheduler.get('long')!.numOutputTokens).toBe(1);
  });

  it('keeps decoding running requests while a newcomer prefills in the leftover budget', () => {
    const h = harness({ numBlocks: 64, maxNumBatchedTokens: 10 });
    h.scheduler.add(makeRequest('a', seq(3), { maxTokens: 20, ignoreEos: true }));
    step(h); // a prefilled, first token sampled
    h.scheduler.add(makeRequest('b', seq(30, 100), { maxTokens: 3, ignoreEos: true }));
    const shapes = [step(h), step(h), step(h), step(h)].map((s) => tokensOf(s.plan));
    // a gets its one token first every step; b takes the other 9, then 9, 9, 3.
    expect(shapes).toEqual([
      { a: 1, b: 9 },
      { a: 1, b: 9 },
      { a: 1, b: 9 },
      { a: 1, b: 3 },
    ]);
  });

  it('never exceeds max_num_seqs; waiting requests start as others finish', () => {
    const h = harness({ numBlocks: 64, maxNumSeqs: 2 });
    for (const id of ['a', 'b', 'c']) h.scheduler.add(makeRequest(id, seq(4), { maxTokens: 2, ignoreEos: true }));
    const first = step(h).plan;
    expect(first.scheduled.map((s) => s.requestId)).toEqual(['a', 'b']);
    expect(h.scheduler.stats()).toMatchObject({ numRunning: 2, numWaiting: 1 });
    const second = step(h); // a and b finish (2 tokens)
    expect(second.out.updates.map((u) => u.finishReason)).toEqual(['length', 'length']);
    expect(second.plan.scheduled.map((s) => s.requestId)).toEqual(['a', 'b']);
    expect(step(h).plan.scheduled.map((s) => s.requestId)).toEqual(['c']);
  });

  it('admits by priority under the priority policy, FCFS otherwise', () => {
    for (const policy of ['fcfs', 'priority'] as const) {
      const h = harness({ numBlocks: 64, maxNumSeqs: 1, policy });
      h.scheduler.add(makeRequest('low', seq(4), { priority: 5, maxTokens: 1 }));
      h.scheduler.add(makeRequest('high', seq(4), { priority: -1, maxTokens: 1 }));
      expect(step(h).plan.scheduled[0]!.requestId).toBe(policy === 'fcfs' ? 'low' : 'high');
      step(h);
    }
  });
});

describe('Scheduler: preemption by recompute', () => {
  it('preempts the latest-arrived running request, requeues it first, logs and counts it', () => {
    const events: PreemptionEvent[] = [];
    // 6 blocks of 4: a and b take 3 each after their prompts, so the next block b needs is missing.
    const h = harness({ numBlocks: 6, log: (e) => events.push(e) });
    h.scheduler.add(makeRequest('a', seq(8), { maxTokens: 8, ignoreEos: true }));
    h.scheduler.add(makeRequest('b', seq(8, 50), { maxTokens: 8, ignoreEos: true }));
    h.scheduler.add(makeRequest('c', seq(3, 90), { maxTokens: 1 }));
    step(h); // a, b prefilled (2 blocks each); c admitted too (1 block)
    const { plan } = step(h); // c done; a and b each need a third block: 6 - 4 = 2 free
    expect(plan.scheduled.map((s) => s.requestId)).toEqual(['a', 'b']);
    let preemptedAt = -1;
    for (let i = 0; i < 6 && preemptedAt < 0; i++) if (step(h).plan.releasedRequestIds.includes('b')) preemptedAt = i;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: 'preempted', requestId: 'b', numPreemptions: 1, totalPreemptions: 1 });
    expect(events[0]!.message).toMatch(/preempted request b/);
    expect(h.scheduler.stats().numPreemptions).toBe(1);
    const b = h.scheduler.get('b')!;
    expect(b.status).toBe('waiting');
    expect(b.numComputedTokens).toBe(0);
    expect(h.kv.has('b')).toBe(false);
    runToCompletion(h, [], { maxNumSeqs: 8, maxNumBatchedTokens: 64 });
  });

  it('admits no waiting request in a step that had to preempt, and resumes the victim first', () => {
    // A budget of 2 makes the victim's recompute chunk 1 token (one block): it would fit right
    // after its own preemption, which is exactly the thrashing the rule avoids.
    // c waits for a seat the whole time; b, once preempted, goes back in front of it.
    const h = harness({ numBlocks: 4, maxNumSeqs: 2, maxNumBatchedTokens: 2, enablePrefixCaching: false });
    h.scheduler.add(makeRequest('a', seq(2), { maxTokens: 12, ignoreEos: true }));
    h.scheduler.add(makeRequest('b', seq(2, 50), { maxTokens: 12, ignoreEos: true }));
    h.scheduler.add(makeRequest('c', [7], { maxTokens: 1 }));
    let preempting: StepPlan | undefined;
    for (let i = 0; i < 20 && !preempting; i++) {
      const { plan } = step(h);
      if (plan.releasedRequestIds.includes('b')) preempting = plan;
    }
    expect(preempting?.scheduled.map((s) => s.requestId)).toEqual(['a']);
    expect(h.kv.numFreeBlocks).toBeGreaterThan(0);
    expect(step(h).plan.scheduled.map((s) => s.requestId)).toEqual(['a', 'b']);
    runToCompletion(h, [], { maxNumSeqs: 8, maxNumBatchedTokens: 2 });
  });

  it('under the priority policy, preempts the least important request even if it came first', () => {
    const events: PreemptionEvent[] = [];
    const h = harness({ numBlocks: 4, policy: 'priority', log: (e) => events.push(e) });
    h.scheduler.add(makeRequest('background', seq(4), { priority: 9, maxTokens: 9, ignoreEos: true }));
    h.scheduler.add(makeRequest('urgent', seq(4, 50), { priority: 0, maxTokens: 9, ignoreEos: true }));
    expect(step(h).plan.scheduled.map((s) => s.requestId)).toEqual(['urgent', 'background']);
    expect(step(h).plan.scheduled.map((s) => s.requestId)).toEqual(['urgent', 'background']);
    while (events.length === 0) step(h);
    expect(events[0]!.requestId).toBe('background');
    runToCompletion(h, [], { maxNumSeqs: 8, maxNumBatchedTokens: 64 });
  });

  it('produces the same tokens as a run that never preempts', () => {
    const requests = ['a', 'b', 'c'].map((id, i) => makeRequest(id, seq(6, i * 10), { maxTokens: 12, ignoreEos: true }));
    const tight = harness({ numBlocks: 7 });
    const outputs = new Map<string, number[]>();
    for (const r of requests) tight.scheduler.add(r);
    let sawResume = false;
    while (tight.scheduler.hasUnfinished()) {
      const { plan, out } = step(tight);
      sawResume ||= plan.scheduled.some((s) => s.isNew && (tight.scheduler.get(s.requestId)?.numPreemptions ?? 0) > 0);
      for (const u of out.updates) outputs.set(u.requestId, [...(outputs.get(u.requestId) ?? []), ...u.newTokenIds]);
    }
    expect(tight.scheduler.stats().numPreemptions).toBeGreaterThan(0);
    expect(sawResume).toBe(true);
    for (const r of requests) expect(outputs.get(r.id)).toEqual(referenceOutput(r, 1024));
  });

  it('a request alone in a cache it exactly fills runs to completion', () => {
    const h = harness({ numBlocks: 4 });
    // 10 prompt + 7 output = 17 tokens; the last sampled token is never fed, so 16 positions = 4 blocks.
    const request = makeRequest('solo', seq(10), { maxTokens: 7, ignoreEos: true });
    h.scheduler.add(request);
    const record = runToCompletion(h, [], { maxNumSeqs: 8, maxNumBatchedTokens: 64 });
    expect(h.scheduler.stats().numPreemptions).toBe(0);
    expect(record.outputs.get('solo')).toEqual(referenceOutput(request, 1024));
    expect(record.finish.get('solo')).toBe('length');
  });
});

describe('Scheduler: admission errors', () => {
  it('rejects a request that can never fit in the whole KV cache, with a clear error', () => {
    const h = harness({ numBlocks: 4 });
    const tooBig = makeRequest('big', seq(10), { maxTokens: 8 }); // 17 positions > 16
    const error = thrown(() => h.scheduler.add(tooBig));
    expect(error).toBeInstanceOf(ConveyorError);
    expect(error).toMatchObject({ code: 'CONTEXT_LENGTH_EXCEEDED', param: 'max_tokens' });
    expect((error as Error).message).toMatch(/can never fit in the KV cache.*5 blocks.*has 4/);
    expect(h.scheduler.hasUnfinished()).toBe(false);
  });

  it('refuses, as a broken invariant, what the input processor never admits (prompts that fill the context, empty prompts, max_tokens below 1), and live duplicate ids', () => {
    const h = harness({ numBlocks: 64, maxModelLen: 8 });
    for (const request of [makeRequest('x', seq(8)), makeRequest('x', []), makeRequest('x', seq(2), { maxTokens: 0 })]) {
      expect(thrown(() => h.scheduler.add(request))).toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/engine invariant broken/) });
    }
    expect(h.scheduler.hasUnfinished()).toBe(false);
    h.scheduler.add(makeRequest('x', seq(2)));
    expect(thrown(() => h.scheduler.add(makeRequest('x', seq(2))))).toMatchObject({ code: 'ALREADY_EXISTS' });
    expect(h.scheduler.stats().numWaiting).toBe(1);
    h.scheduler.abort('x');
  });

  it('caps output by the context length when checking fit', () => {
    // max_tokens is huge but the context (12) caps the sequence: 11 positions = 3 blocks fit.
    const h = harness({ numBlocks: 3, maxModelLen: 12 });
    const request = makeRequest('capped', seq(5), { maxTokens: 10_000, ignoreEos: true });
    h.scheduler.add(request);
    const record = runToCompletion(h, [], { maxNumSeqs: 8, maxNumBatchedTokens: 64 });
    expect(record.finish.get('capped')).toBe('length');
    expect(record.outputs.get('capped')).toHaveLength(7);
  });

  it('rejects a malformed configuration', () => {
    expect(() => harness({ numBlocks: 4, maxNumSeqs: 0 })).toThrow(/maxNumSeqs/);
    expect(() => harness({ numBlocks: 4, maxNumBatchedTokens: 1.5 })).toThrow(/maxNumBatchedTokens/);
  });
});

describe('Scheduler: abort', () => {
  it('frees a running request’s blocks immediately and reports abort', () => {
    const h = harness({ numBlocks: 16 });
    h.scheduler.add(makeRequest('a', seq(9), { ignoreEos: true }));
    step(h);
    expect(h.kv.numFreeBlocks).toBeLessThan(16);
    const update = h.scheduler.abort('a');
    expect(update).toMatchObject({ requestId: 'a', finishReason: 'abort', newTokenIds: [], numOutputTokens: 1 });
    expect(h.kv.has('a')).toBe(false);
    expect(h.kv.numFreeBlocks).toBe(16);
    expect(h.scheduler.hasUnfinished()).toBe(false);
    expect(h.scheduler.abort('a')).toBeNull();
    h.scheduler.add(makeRequest('s', seq(3)));
    expect(h.scheduler.abort('s', 'stop')).toMatchObject({ finishReason: 'stop', stopTokenId: null }); // a stop string matched downstream
    expect(h.scheduler.schedule().releasedRequestIds).toEqual(['a', 's']);
    h.scheduler.apply({ stepId: 1, sampled: [] });
  });

  it('removes a waiting request that never ran', () => {
    const h = harness({ numBlocks: 16, maxNumSeqs: 1 });
    h.scheduler.add(makeRequest('a', seq(4), { ignoreEos: true }));
    h.scheduler.add(makeRequest('b', seq(4)));
    step(h);
    expect(h.scheduler.abort('b')).toMatchObject({ finishReason: 'abort', scheduledTimeMs: null, numOutputTokens: 0 });
    expect(h.scheduler.stats().numWaiting).toBe(0);
    h.scheduler.abort('a');
  });

  it('drops the results of a request aborted while its step runs, even if its id is reused', () => {
    const h = harness({ numBlocks: 16 });
    h.scheduler.add(makeRequest('a', seq(4), { ignoreEos: true }));
    h.scheduler.add(makeRequest('b', seq(4, 20), { ignoreEos: true }));
    const plan = h.scheduler.schedule();
    const result = h.runner.execute(plan);
    h.scheduler.abort('a');
    expect(h.kv.has('a')).toBe(false);
    h.scheduler.add(makeRequest('a', seq(6, 40), { ignoreEos: true }));
    const out = h.scheduler.apply(result);
    expect(out.updates.map((u) => u.requestId)).toEqual(['b']);
    expect(h.scheduler.get('a')!.numComputedTokens).toBe(0);
    h.kv.checkIntegrity();
    h.scheduler.abort('a');
    h.scheduler.abort('b');
  });
});

describe('Scheduler: stops, prefix hits and the step contract', () => {
  it('finishes on EOS with the token reported, and keeps going with ignore_eos', () => {
    const h = harness({ numBlocks: 16 });
    h.scheduler.add(makeRequest('eos', seq(4)));
    h.scheduler.add(makeRequest('ignore', seq(4, 10), { ignoreEos: true }));
    const { out } = step(h, { eos: EOS, ignore: EOS });
    expect(out.updates.find((u) => u.requestId === 'eos')).toMatchObject({ finishReason: 'stop', stopTokenId: EOS, newTokenIds: [EOS] });
    expect(out.updates.find((u) => u.requestId === 'ignore')).toMatchObject({ finishReason: null, stopTokenId: null });
    expect(h.kv.has('eos')).toBe(false);
    h.scheduler.abort('ignore');
  });

  it('finishes on stop_token_ids and on max_tokens', () => {
    const h = harness({ numBlocks: 16 });
    h.scheduler.add(makeRequest('stop', seq(4), { stopTokenIds: [7] }));
    h.scheduler.add(makeRequest('len', seq(4, 10), { maxTokens: 2, ignoreEos: true }));
    expect(step(h, { stop: 3 }).out.updates.map((u) => u.finishReason)).toEqual([null, null]);
    const { out } = step(h, { stop: 7 });
    expect(out.updates.map((u) => [u.requestId, u.finishReason, u.numOutputTokens])).toEqual([
      ['stop', 'stop', 2],
      ['len', 'length', 2],
    ]);
  });

  it('drops tokens sampled after a stop (several tokens per step)', () => {
    const h = harness({ numBlocks: 16 });
    h.scheduler.add(makeRequest('multi', seq(4)));
    const plan = h.scheduler.schedule();
    h.runner.execute(plan);
    const logprobs = [5, EOS, 6].map((tokenId) => ({ tokenId, logprob: -1, top: [] }));
    const out = h.scheduler.apply({ stepId: plan.stepId, sampled: [{ requestId: 'multi', tokenIds: [5, EOS, 6], logprobs }] });
    expect(out.updates[0]).toMatchObject({ newTokenIds: [5, EOS], finishReason: 'stop', numOutputTokens: 2 });
    expect(out.updates[0]!.logprobs).toHaveLength(2);
  });

  it('defers a prompt whose next block another request computes this step, so it hits the cache a step later (n choices)', () => {
    const h = harness({ numBlocks: 32 });
    const prompt = seq(14, 300);
    for (const id of ['a', 'b', 'c']) h.scheduler.add(makeRequest(id, prompt, { ignoreEos: true, maxTokens: 3 }));
    // A different prompt behind them still waits its turn (first come, first served).
    h.scheduler.add(makeRequest('other', seq(6, 900), { ignoreEos: true, maxTokens: 3 }));
    expect(Object.keys(tokensOf(step(h).plan))).toEqual(['a']);
    const { plan, out } = step(h);
    expect(tokensOf(plan)).toEqual({ a: 1, b: 2, c: 2, other: 6 });
    for (const id of ['b', 'c']) expect(out.updates.find((u) => u.requestId === id)!.numCachedTokens).toBe(12);
    // Without prefix caching there is nothing to wait for.
    const plain = harness({ numBlocks: 32, enablePrefixCaching: false });
    for (const id of ['a', 'b']) plain.scheduler.add(makeRequest(id, prompt, { ignoreEos: true, maxTokens: 3 }));
    expect(tokensOf(step(plain).plan)).toEqual({ a: 14, b: 14 });
    for (const harnessOf of [h, plain]) for (const id of ['a', 'b', 'c', 'other']) if (harnessOf.scheduler.get(id)) harnessOf.scheduler.abort(id);
  });

  it('reports cached prompt tokens and shares prefix blocks between live requests', () => {
    const h = harness({ numBlocks: 32 });
    const system = seq(12, 300);
    h.scheduler.add(makeRequest('first', [...system, 1, 2], { ignoreEos: true }));
    step(h);
    h.scheduler.add(makeRequest('second', [...system, 3, 4, 5], { ignoreEos: true }));
    const { plan, out } = step(h);
    const second = plan.scheduled.find((s) => s.requestId === 'second')!;
    const first = plan.scheduled.find((s) => s.requestId === 'first')!;
    expect(second.numComputedTokens).toBe(12);
    expect(second.tokenIds).toEqual([3, 4, 5]);
    expect(second.blockTable.slice(0, 3)).toEqual(first.blockTable.slice(0, 3));
    for (const b of second.blockTable.slice(0, 3)) expect(h.kv.refCount(b)).toBe(2);
    expect(out.updates.find((u) => u.requestId === 'second')!.numCachedTokens).toBe(12);
    expect(out.stats).toMatchObject({ prefixCacheQueries: 14 + 15, prefixCacheHits: 12 });
    h.scheduler.abort('first');
    h.scheduler.abort('second');
  });

  it('stamps arrival, scheduled, first-token and step times from the injected clock', () => {
    const h = harness({ numBlocks: 16, maxNumBatchedTokens: 4 });
    h.clock.ms = 3;
    h.scheduler.add(makeRequest('t', seq(6), { ignoreEos: true }));
    h.scheduler.add(makeRequest('stamped', seq(6, 50), { ignoreEos: true }), 5);
    h.clock.ms = 10;
    step(h);
    h.clock.ms = 20;
    const { out } = step(h);
    expect(out.timeMs).toBe(20);
    expect(out.updates[0]).toMatchObject({ arrivalTimeMs: 3, scheduledTimeMs: 10, firstTokenTimeMs: 20 });
    expect(h.scheduler.abort('stamped')).toMatchObject({ arrivalTimeMs: 5 });
    h.scheduler.abort('t');
  });

  it('enforces schedule → apply pairing and the result contract', () => {
    const h = harness({ numBlocks: 16 });
    h.scheduler.add(makeRequest('a', seq(4), { ignoreEos: true }));
    expect(() => h.scheduler.apply({ stepId: 0, sampled: [] })).toThrow(/without a scheduled step/);
    const plan = h.scheduler.schedule();
    expect(() => h.scheduler.schedule()).toThrow(/before apply/);
    expect(() => h.scheduler.apply({ stepId: plan.stepId + 1, sampled: [] })).toThrow(/expected/);
    expect(() => h.scheduler.apply({ stepId: plan.stepId, sampled: [] })).toThrow(/lacks request a/);
  });

  it('rejects samples for requests that were not sampled this step', () => {
    const h = harness({ numBlocks: 16, maxNumBatchedTokens: 2 });
    h.scheduler.add(makeRequest('a', seq(4), { ignoreEos: true }));
    const plan = h.scheduler.schedule(); // a prefill chunk: nothing to sample
    expect(() => h.scheduler.apply({ stepId: plan.stepId, sampled: [{ requestId: 'a', tokenIds: [1], logprobs: null }] })).toThrow(/samples request a/);
  });
});
