// schedule → fake execute → apply loops over seeded random workloads. Every step checks the
// budgets, that no shared block is written, and the pool's integrity; every request's tokens must
// equal what the fake model produces for it alone.

import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../../src/contracts/generate.js';
import type { PreemptionEvent } from '../../../src/engine-worker/scheduler.js';
import { checkTrackedIntegrity, harness, makeRequest, randomTokens, referenceOutput, rng, runToCompletion } from '../../support/fake-model.js';

afterEach(checkTrackedIntegrity);

const MAX_MODEL_LEN = 1024;

interface WorkloadOptions {
  readonly numRequests: number;
  readonly maxPrompt: number;
  readonly maxOutput: number;
  /** Arrivals spread over this many steps. */
  readonly spread: number;
  /** Prompts start with one of these prefixes (a system prompt, a few-shot block). */
  readonly prefixes?: readonly (readonly number[])[];
  readonly stopTokenIds?: readonly number[];
}

function workload(seed: number, o: WorkloadOptions): { step: number; request: GenerateRequest }[] {
  const next = rng(seed);
  return Array.from({ length: o.numRequests }, (_, i) => {
    const prefix = o.prefixes ? o.prefixes[next(o.prefixes.length)]! : [];
    const prompt = [...prefix, ...randomTokens(next, 1 + next(o.maxPrompt))];
    const step = next(o.spread);
    const request = makeRequest(`r${i}`, prompt, { maxTokens: 1 + next(o.maxOutput), stopTokenIds: o.stopTokenIds ?? [] });
    return { step, request };
  });
}

function expectReferenceOutputs(arrivals: readonly { request: GenerateRequest }[], outputs: Map<string, number[]>): void {
  for (const { request } of arrivals) expect(outputs.get(request.id), request.id).toEqual(referenceOutput(request, MAX_MODEL_LEN));
}

describe('scheduler loop: continuous batching', () => {
  const configs = [
    { maxNumSeqs: 8, maxNumBatchedTokens: 32 },
    { maxNumSeqs: 3, maxNumBatchedTokens: 8 },
    { maxNumSeqs: 16, maxNumBatchedTokens: 5 },
  ];
  it.each(configs)('staggered arrivals and mixed lengths under %o', (config) => {
    for (const seed of [1, 2, 3]) {
      const arrivals = workload(seed, { numRequests: 24, maxPrompt: 40, maxOutput: 20, spread: 30, stopTokenIds: [3, 14, 159, 265] });
      const h = harness({ numBlocks: 512, maxModelLen: MAX_MODEL_LEN, ...config });
      const record = runToCompletion(h, arrivals, config);
      expectReferenceOutputs(arrivals, record.outputs);
      // Chunking happened (a prompt longer than the budget) and steps mixed several requests.
      expect(record.plans.some((p) => p.scheduled.some((s) => !s.sample))).toBe(true);
      expect(record.plans.some((p) => p.scheduled.length > 1)).toBe(true);
      expect(h.scheduler.stats().numPreemptions).toBe(0);
    }
  });
});

describe('scheduler loop: preemption', () => {
  it('gives every request the same tokens with a small pool as with an unconstrained one', () => {
    const config = { maxNumSeqs: 8, maxNumBatchedTokens: 24 };
    for (const seed of [11, 12, 13, 14]) {
      const arrivals = workload(seed, { numRequests: 16, maxPrompt: 30, maxOutput: 30, spread: 10 });
      const free = harness({ numBlocks: 1024, ...config });
      const events: PreemptionEvent[] = [];
      // 16 blocks of 4 = 64 positions: any single request (≤ 60) fits, most pairs do not.
      const tight = harness({ numBlocks: 16, log: (e) => events.push(e), ...config });
      const unconstrained = runToCompletion(free, arrivals, config);
      const constrained = runToCompletion(tight, arrivals, config);
      expect(constrained.outputs).toEqual(unconstrained.outputs);
      expect(constrained.finish).toEqual(unconstrained.finish);
      // Resumed requests hit their own freed blocks, but usage reports first-admission hits only.
      expect(constrained.cached).toEqual(unconstrained.cached);
      expectReferenceOutputs(arrivals, constrained.outputs);
      expect(tight.scheduler.stats().numPreemptions).toBeGreaterThan(0);
      expect(events).toHaveLength(tight.scheduler.stats().numPreemptions);
      expect(free.scheduler.stats().numPreemptions).toBe(0);
    }
  });

  it('preempts and recomputes correctly without prefix caching too', () => {
    const config = { maxNumSeqs: 6, maxNumBatchedTokens: 16 };
    const arrivals = workload(21, { numRequests: 12, maxPrompt: 25, maxOutput: 25, spread: 5 });
    const tight = harness({ numBlocks: 14, enablePrefixCaching: false, ...config });
    const record = runToCompletion(tight, arrivals, config);
    expectReferenceOutputs(arrivals, record.outputs);
    expect(tight.scheduler.stats().numPreemptions).toBeGreaterThan(0);
  });
});

describe('scheduler loop: prefix caching', () => {
  const next = rng(99);
  const prefixes = [randomTokens(next, 24), randomTokens(next, 13), randomTokens(next, 8)];
  const options = { numRequests: 30, maxPrompt: 10, maxOutput: 12, spread: 60, prefixes };
  const config = { maxNumSeqs: 4, maxNumBatchedTokens: 16 };

  it('reports cached tokens and produces the same tokens as with caching off', () => {
    const arrivals = workload(5, options);
    const on = harness({ numBlocks: 256, ...config });
    const off = harness({ numBlocks: 256, enablePrefixCaching: false, ...config });
    const cached = runToCompletion(on, arrivals, config);
    const uncached = runToCompletion(off, arrivals, config);
    expect(cached.outputs).toEqual(uncached.outputs);
    expectReferenceOutputs(arrivals, cached.outputs);
    const hits = on.scheduler.stats().prefixCacheHits;
    expect(hits).toBeGreaterThan(0);
    expect([...cached.cached.values()].reduce((a, b) => a + b, 0)).toBe(hits);
    expect([...uncached.cached.values()].every((n) => n === 0)).toBe(true);
    // Fewer tokens were fed to the model: the hits were really skipped.
    const fed = (r: typeof cached) => r.plans.reduce((n, p) => n + p.numScheduledTokens, 0);
    expect(fed(uncached) - fed(cached)).toBe(hits);
  });

  it('stays correct while a small pool evicts cached blocks', () => {
    const arrivals = workload(6, options);
    const tight = harness({ numBlocks: 20, ...config });
    const record = runToCompletion(tight, arrivals, config);
    expectReferenceOutputs(arrivals, record.outputs);
    expect(tight.scheduler.stats().prefixCacheHits).toBeGreaterThan(0);
  });

  it('shares prefix blocks between requests running together', () => {
    const arrivals = workload(7, { ...options, spread: 4 });
    const h = harness({ numBlocks: 256, ...config });
    const record = runToCompletion(h, arrivals, config);
    const shared = record.plans.some((p) => {
      const firstBlocks = p.scheduled.map((s) => s.blockTable[0]);
      return new Set(firstBlocks).size < firstBlocks.length;
    });
    expect(shared).toBe(true);
  });
});

describe('scheduler loop: aborts', () => {
  it('frees aborted requests within the step and leaves the others untouched', () => {
    const config = { maxNumSeqs: 8, maxNumBatchedTokens: 16 };
    const arrivals = workload(31, { numRequests: 20, maxPrompt: 30, maxOutput: 30, spread: 20 });
    const h = harness({ numBlocks: 40, ...config });
    const next = rng(32);
    const aborted = new Set<string>();
    const outputs = new Map<string, number[]>();
    const queue = [...arrivals].sort((a, b) => a.step - b.step);
    for (let step = 0; queue.length > 0 || h.scheduler.hasUnfinished(); step++) {
      while (queue[0] && queue[0].step <= step) h.scheduler.add(queue.shift()!.request);
      const plan = h.scheduler.schedule();
      const result = h.runner.execute(plan);
      // Abort a random live request mid-step now and then.
      const victim = plan.scheduled[next(Math.max(1, plan.scheduled.length))];
      if (victim && next(4) === 0) {
        expect(h.scheduler.abort(victim.requestId)).toMatchObject({ finishReason: 'abort' });
        expect(h.kv.has(victim.requestId)).toBe(false);
        aborted.add(victim.requestId);
      }
      for (const u of h.scheduler.apply(result).updates) outputs.set(u.requestId, [...(outputs.get(u.requestId) ?? []), ...u.newTokenIds]);
      h.kv.checkIntegrity();
    }
    expect(aborted.size).toBeGreaterThan(0);
    expect(h.kv.numFreeBlocks).toBe(h.kv.numTotalBlocks);
    for (const { request } of arrivals) {
      const expected = referenceOutput(request, MAX_MODEL_LEN);
      const got = outputs.get(request.id) ?? [];
      if (aborted.has(request.id)) expect(expected.slice(0, got.length)).toEqual(got);
      else expect(got).toEqual(expected);
    }
  });
});

describe('scheduler loop: aborts while a step is in flight (property)', () => {
  // The runner may or may not have sampled a request aborted between schedule() and apply():
  // either way apply() drops its results, frees nothing twice, and the other requests decode
  // exactly as alone. A live request the runner skipped is still a contract violation.
  it('accepts results with or without the aborted rows, thousands of steps', () => {
    let steps = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.record({ maxNumSeqs: fc.integer({ min: 1, max: 8 }), maxNumBatchedTokens: fc.integer({ min: 2, max: 32 }), numBlocks: fc.constantFrom(16, 24, 64, 512) }),
        (seed, { numBlocks, ...config }) => {
          const arrivals = workload(seed, { numRequests: 12, maxPrompt: 24, maxOutput: 24, spread: 12 });
          const h = harness({ numBlocks, ...config });
          const next = rng(seed ^ 0x5bd1e995);
          const aborted = new Set<string>();
          const outputs = new Map<string, number[]>();
          const queue = [...arrivals].sort((a, b) => a.step - b.step);
          for (let step = 0; queue.length > 0 || h.scheduler.hasUnfinished(); step++) {
            while (queue[0] && queue[0].step <= step) h.scheduler.add(queue.shift()!.request);
            const plan = h.scheduler.schedule();
            steps++;
            let result = h.runner.execute(plan);
            const victims = plan.scheduled.filter(() => next(5) === 0).map((s) => s.requestId);
            for (const id of victims) {
              h.scheduler.abort(id, next(2) === 0 ? 'abort' : 'stop');
              aborted.add(id);
            }
            // Half the time the runner "saw" the abort and left those rows out.
            if (next(2) === 0) result = { ...result, sampled: result.sampled.filter((s) => !victims.includes(s.requestId)) };
            const output = h.scheduler.apply(result);
            for (const u of output.updates) {
              expect(victims).not.toContain(u.requestId);
              outputs.set(u.requestId, [...(outputs.get(u.requestId) ?? []), ...u.newTokenIds]);
            }
            h.kv.checkIntegrity();
          }
          expect(h.kv.numFreeBlocks).toBe(h.kv.numTotalBlocks);
          for (const { request } of arrivals) {
            const expected = referenceOutput(request, MAX_MODEL_LEN);
            const got = outputs.get(request.id) ?? [];
            if (aborted.has(request.id)) expect(expected.slice(0, got.length)).toEqual(got);
            else expect(got).toEqual(expected);
          }
        },
      ),
      { numRuns: 200 },
    );
    expect(steps).toBeGreaterThan(2000);
  });

  it('still refuses a result that skips a live sampled request', () => {
    const h = harness({ numBlocks: 64 });
    h.scheduler.add(makeRequest('a', [1, 2, 3]));
    h.scheduler.add(makeRequest('b', [4, 5, 6]));
    const plan = h.scheduler.schedule();
    const result = h.runner.execute(plan);
    h.scheduler.abort('a');
    expect(() => h.scheduler.apply({ ...result, sampled: result.sampled.filter((s) => s.requestId === 'a') })).toThrow(/lacks request b/);
  });
});
