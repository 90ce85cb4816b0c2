// The scheduling policies (vLLM's --scheduling-policy) as pure logic over the fake runner and an
// injected clock. fcfs: arrival order, `priority` ignored. priority: (priority, arrival) order,
// lower first; a waiting request that outranks a running one and finds no seat or blocks
// preempts the lowest-ranked running request. The rank is written out here independently of the
// scheduler's own comparator, so a wrong comparator cannot agree with itself.

import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { GenerateRequest, SchedulingPolicy, StepPlan } from '../../../src/contracts/generate.js';
import { RequestState } from '../../../src/engine-worker/request-state.js';
import type { PreemptionEvent } from '../../../src/engine-worker/scheduler.js';
import { createWaitingQueue } from '../../../src/engine-worker/scheduler-queue.js';
import { type Harness, checkTrackedIntegrity, harness, makeRequest, randomTokens, referenceOutput, rng } from '../../support/fake-model.js';

afterEach(checkTrackedIntegrity);

const MAX_MODEL_LEN = 1024;
const seq = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

/** Negative when `a` should run before `b` under `policy`: the definition the tests hold the scheduler to. */
function outranks(policy: SchedulingPolicy, a: Readonly<RequestState>, b: Readonly<RequestState>): boolean {
  const key = (s: Readonly<RequestState>) => (policy === 'priority' ? [s.request.priority, s.arrivalTimeMs, s.sequence] : [s.arrivalTimeMs, s.sequence]);
  const [ka, kb] = [key(a), key(b)];
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]!;
  return false;
}

function step(h: Harness): StepPlan {
  const plan = h.scheduler.schedule();
  h.scheduler.apply(h.runner.execute(plan));
  h.kv.checkIntegrity();
  return plan;
}

describe('waiting queue order (property)', () => {
  const item = fc.record({ priority: fc.integer({ min: -2, max: 2 }), arrival: fc.integer({ min: 0, max: 4 }), preempted: fc.boolean() });

  it('takes (priority, arrival, submission) order under priority, submission order under fcfs', () => {
    fc.assert(
      fc.property(fc.array(item, { maxLength: 40 }), fc.constantFrom<SchedulingPolicy>('fcfs', 'priority'), (items, policy) => {
        const states = items.map((it, i) => new RequestState(makeRequest(`r${i}`, [1], { priority: it.priority }), i, it.arrival));
        const queue = createWaitingQueue(policy);
        states.forEach((s) => queue.add(s));
        const taken = Array.from({ length: states.length }, () => queue.shift()!);
        expect(queue.length).toBe(0);
        const expected = policy === 'priority' ? [...states].sort((a, b) => (outranks(policy, a, b) ? -1 : outranks(policy, b, a) ? 1 : 0)) : states;
        expect(taken.map((s) => s.id)).toEqual(expected.map((s) => s.id));
      }),
    );
  });

  it('puts a preempted request back by its rank under priority, at the very front under fcfs', () => {
    fc.assert(
      fc.property(fc.array(item, { minLength: 1, maxLength: 30 }), fc.constantFrom<SchedulingPolicy>('fcfs', 'priority'), (items, policy) => {
        const states = items.map((it, i) => new RequestState(makeRequest(`r${i}`, [1], { priority: it.priority }), i, it.arrival));
        const queue = createWaitingQueue(policy);
        for (const [i, s] of states.entries()) {
          if (items[i]!.preempted) queue.requeuePreempted(s);
          else queue.add(s);
        }
        const taken = [...queue];
        if (policy === 'priority') {
          for (let i = 1; i < taken.length; i++) expect(outranks(policy, taken[i]!, taken[i - 1]!)).toBe(false);
        } else {
          // Each requeued request went in front of everything queued before it.
          const requeued = states.filter((_, i) => items[i]!.preempted).reverse();
          expect(taken.slice(0, requeued.length).map((s) => s.id)).toEqual(requeued.map((s) => s.id));
        }
      }),
    );
  });
});

interface Arrival {
  readonly step: number;
  readonly request: GenerateRequest;
}

function workload(seed: number, numRequests: number, numPriorities: number): Arrival[] {
  const next = rng(seed);
  return Array.from({ length: numRequests }, (_, i) => ({
    step: next(12),
    request: makeRequest(`r${i}`, randomTokens(next, 1 + next(20)), { maxTokens: 1 + next(16), ignoreEos: true, priority: next(numPriorities) }),
  }));
}

interface Observed {
  readonly outputs: Map<string, number[]>;
  readonly events: PreemptionEvent[];
  /** Preemptions a waiting request caused by outranking the victim (rather than a running one running out of blocks). */
  rankPreemptions: number;
}

/**
 * Runs the workload to the end (each request added at its step, the clock reading the step),
 * checking after every schedule() that each request admitted in it outranks every request left
 * waiting and none was preempted in the same step, and at every preemption that the victim ranks below every request still running.
 */
function runChecked(policy: SchedulingPolicy, arrivals: readonly Arrival[], config: { numBlocks: number; maxNumSeqs: number; maxNumBatchedTokens: number }): Observed {
  const ids = arrivals.map((a) => a.request.id);
  const observed: Observed = { outputs: new Map(), events: [], rankPreemptions: 0 };
  let preemptedThisStep = new Set<string>();
  const h: Harness = harness({
    ...config,
    policy,
    maxModelLen: MAX_MODEL_LEN,
    log: (event) => {
      observed.events.push(event);
      preemptedThisStep.add(event.requestId);
      if (event.message.includes('outranks')) observed.rankPreemptions++;
      const victim = h.scheduler.get(event.requestId)!;
      for (const id of ids) {
        const other = h.scheduler.get(id);
        if (other?.status === 'running') expect(outranks(policy, victim, other), `${victim.id} preempted while ${id} runs`).toBe(false);
      }
    },
  });
  const queue = [...arrivals].sort((a, b) => a.step - b.step);
  for (let t = 0; queue.length > 0 || h.scheduler.hasUnfinished(); t++) {
    expect(t).toBeLessThan(10_000);
    h.clock.ms = t;
    while (queue[0] && queue[0].step <= t) h.scheduler.add(queue.shift()!.request);
    preemptedThisStep = new Set();
    const plan = h.scheduler.schedule();
    // Readmitting a request in the step that preempted it would only thrash.
    for (const entry of plan.scheduled) expect(preemptedThisStep.has(entry.requestId), `${entry.requestId} preempted and scheduled in one step`).toBe(false);
    const waiting = ids.map((id) => h.scheduler.get(id)).filter((s) => s?.status === 'waiting');
    for (const entry of plan.scheduled.filter((s) => s.isNew)) {
      const admitted = h.scheduler.get(entry.requestId)!;
      for (const w of waiting) expect(outranks(policy, w!, admitted), `${admitted.id} admitted before ${w!.id}`).toBe(false);
    }
    for (const u of h.scheduler.apply(h.runner.execute(plan)).updates) observed.outputs.set(u.requestId, [...(observed.outputs.get(u.requestId) ?? []), ...u.newTokenIds]);
    h.kv.checkIntegrity();
  }
  expect(h.kv.numFreeBlocks).toBe(h.kv.numTotalBlocks);
  return observed;
}

describe('admission and preemption order (property)', () => {
  const config = fc.record({ numBlocks: fc.constantFrom(10, 12, 16, 64), maxNumSeqs: fc.integer({ min: 1, max: 4 }), maxNumBatchedTokens: fc.integer({ min: 4, max: 32 }) });

  it.each(['fcfs', 'priority'] as const)('%s: admits in rank order, preempts the lowest rank, and every request decodes as alone', (policy) => {
    let rankPreemptions = 0;
    let preemptions = 0;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), config, (seed, c) => {
        const arrivals = workload(seed, 14, 4);
        const observed = runChecked(policy, arrivals, c);
        for (const { request } of arrivals) expect(observed.outputs.get(request.id), request.id).toEqual(referenceOutput(request, MAX_MODEL_LEN));
        rankPreemptions += observed.rankPreemptions;
        preemptions += observed.events.length;
      }),
      { numRuns: 60 },
    );
    // The runs exercised what they check: preemption for blocks, and under priority for rank.
    expect(preemptions).toBeGreaterThan(0);
    if (policy === 'priority') expect(rankPreemptions).toBeGreaterThan(0);
    else expect(rankPreemptions).toBe(0);
  });

  it('fcfs ignores priority: the order is the same as with every priority equal', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), config, (seed, c) => {
        const mixed = workload(seed, 10, 4);
        const equal = mixed.map((a) => ({ ...a, request: { ...a.request, priority: 0 } }));
        const order = (arrivals: readonly Arrival[]) => {
          const h = harness({ ...c, policy: 'fcfs' });
          const queue = [...arrivals].sort((a, b) => a.step - b.step);
          const admitted: string[] = [];
          for (let t = 0; queue.length > 0 || h.scheduler.hasUnfinished(); t++) {
            h.clock.ms = t;
            while (queue[0] && queue[0].step <= t) h.scheduler.add(queue.shift()!.request);
            admitted.push(
              ...step(h)
                .scheduled.filter((s) => s.isNew)
                .map((s) => s.requestId),
            );
          }
          return admitted;
        };
        expect(order(mixed)).toEqual(order(equal));
      }),
      { numRuns: 30 },
    );
  });
});

describe('priority preemption for a waiting request', () => {
  it('takes the seat of a lower-priority running request, which resumes once the seat is free', () => {
    const events: PreemptionEvent[] = [];
    const h = harness({ numBlocks: 64, maxNumSeqs: 1, policy: 'priority', log: (e) => events.push(e) });
    const low = makeRequest('low', seq(4), { priority: 5, maxTokens: 6, ignoreEos: true });
    const high = makeRequest('high', seq(4, 50), { priority: 1, maxTokens: 3, ignoreEos: true });
    h.scheduler.add(low);
    step(h);
    step(h);
    h.clock.ms = 1;
    h.scheduler.add(high);
    const plan = step(h);
    expect(plan.scheduled.map((s) => [s.requestId, s.isNew])).toEqual([['high', true]]);
    expect(plan.releasedRequestIds).toEqual(['low']);
    expect(events).toMatchObject([{ requestId: 'low', numLostTokens: 5, numPreemptions: 1 }]);
    expect(events[0]!.message).toMatch(/request high \(priority 1\) outranks it \(priority 5\)/);
    expect(h.scheduler.get('low')).toMatchObject({ status: 'waiting', numComputedTokens: 0 });
    const order: string[] = [];
    const outputs = new Map<string, number[]>();
    while (h.scheduler.hasUnfinished()) {
      const p = h.scheduler.schedule();
      order.push(...p.scheduled.map((s) => s.requestId));
      for (const u of h.scheduler.apply(h.runner.execute(p)).updates) outputs.set(u.requestId, [...(outputs.get(u.requestId) ?? []), ...u.newTokenIds]);
    }
    expect(order).toEqual(['high', 'high', 'low', 'low', 'low', 'low']);
    expect(outputs.get('high')).toEqual(referenceOutput(high, MAX_MODEL_LEN).slice(1));
    // The victim recomputes its prompt and the tokens it already had, then carries on.
    expect(outputs.get('low')).toEqual(referenceOutput(low, MAX_MODEL_LEN).slice(2));
  });

  it('takes the blocks of lower-priority running requests, lowest first', () => {
    const events: PreemptionEvent[] = [];
    // 8 blocks of 4: two 12-token requests take 3 blocks each; a third needs 3 and finds 2.
    const h = harness({ numBlocks: 8, policy: 'priority', enablePrefixCaching: false, log: (e) => events.push(e) });
    h.scheduler.add(makeRequest('mid', seq(12), { priority: 2, maxTokens: 2, ignoreEos: true }));
    h.scheduler.add(makeRequest('low', seq(12, 100), { priority: 3, maxTokens: 2, ignoreEos: true }));
    step(h);
    h.scheduler.add(makeRequest('high', seq(12, 200), { priority: 0, maxTokens: 2, ignoreEos: true }));
    const plan = step(h);
    expect(events.map((e) => e.requestId)).toEqual(['low']);
    expect(plan.scheduled.map((s) => s.requestId)).toEqual(['mid', 'high']);
    while (h.scheduler.hasUnfinished()) step(h);
  });

  it('withdraws the victim from the step it was already scheduled in, budget included', () => {
    const h = harness({ numBlocks: 64, maxNumSeqs: 2, maxNumBatchedTokens: 8, policy: 'priority' });
    h.scheduler.add(makeRequest('top', seq(2), { priority: 0, maxTokens: 9, ignoreEos: true }));
    h.scheduler.add(makeRequest('low', seq(2, 50), { priority: 9, maxTokens: 9, ignoreEos: true }));
    step(h);
    h.scheduler.add(makeRequest('mid', seq(7, 100), { priority: 1, maxTokens: 2, ignoreEos: true }));
    const plan = step(h);
    // low's decode token was handed back: mid's 7-token prompt fits the 8-token budget beside top.
    expect(plan.scheduled.map((s) => [s.requestId, s.tokenIds.length])).toEqual([
      ['top', 1],
      ['mid', 7],
    ]);
    expect(plan.numScheduledTokens).toBe(8);
    expect(plan.releasedRequestIds).toEqual(['low']);
    expect(h.kv.has('low')).toBe(false);
    while (h.scheduler.hasUnfinished()) step(h);
  });

  it('does not preempt for an equal priority (ties go by arrival) nor under fcfs', () => {
    for (const [policy, priority] of [
      ['priority', 5],
      ['fcfs', 0],
    ] as const) {
      const h = harness({ numBlocks: 64, maxNumSeqs: 1, policy });
      h.scheduler.add(makeRequest('first', seq(4), { priority: 5, maxTokens: 4, ignoreEos: true }));
      step(h);
      h.clock.ms = 1;
      h.scheduler.add(makeRequest('second', seq(4, 50), { priority, maxTokens: 1 }));
      const order: string[] = [];
      while (h.scheduler.hasUnfinished()) order.push(...step(h).scheduled.map((s) => s.requestId));
      expect(order).toEqual(['first', 'first', 'first', 'second']);
      expect(h.scheduler.stats().numPreemptions).toBe(0);
    }
  });

  it('does not readmit the victim in the step that preempted it, though its blocks would fit', () => {
    // 8 blocks of 4, budget 16. low holds 5 blocks once it decodes; high needs 4 and finds 3, so
    // low goes (8 free), high takes 4, and low's 2-token recompute chunk would fit the other 4.
    const h = harness({ numBlocks: 8, maxNumBatchedTokens: 16, policy: 'priority', enablePrefixCaching: false });
    const low = makeRequest('low', seq(16), { priority: 5, maxTokens: 10, ignoreEos: true });
    const high = makeRequest('high', seq(14, 100), { priority: 0, maxTokens: 2, ignoreEos: true });
    h.scheduler.add(low);
    step(h);
    h.scheduler.add(high);
    const plan = step(h);
    expect(plan.scheduled.map((s) => [s.requestId, s.tokenIds.length])).toEqual([['high', 14]]);
    expect(plan.releasedRequestIds).toEqual(['low']);
    expect(h.kv.numFreeBlocks).toBe(4);
    expect(step(h).scheduled.map((s) => [s.requestId, s.isNew])).toEqual([
      ['high', false],
      ['low', true],
    ]);
    while (h.scheduler.hasUnfinished()) step(h);
  });

  it('resumes the victim by its rank once a seat is free, still ahead of lower ranks', () => {
    // 2 seats; high takes low's. When high is done, low (resumed) goes before the lower "last".
    const h = harness({ numBlocks: 64, maxNumSeqs: 2, policy: 'priority' });
    h.scheduler.add(makeRequest('top', seq(2), { priority: 0, maxTokens: 6, ignoreEos: true }));
    h.scheduler.add(makeRequest('low', seq(2, 50), { priority: 5, maxTokens: 6, ignoreEos: true }));
    step(h);
    h.scheduler.add(makeRequest('high', seq(2, 100), { priority: 1, maxTokens: 1 }));
    h.scheduler.add(makeRequest('last', seq(2, 150), { priority: 7, maxTokens: 1 }));
    expect(step(h).scheduled.map((s) => s.requestId)).toEqual(['top', 'high']);
    expect(step(h).scheduled.map((s) => s.requestId)).toEqual(['top', 'low']);
    while (h.scheduler.hasUnfinished()) step(h);
  });
});
