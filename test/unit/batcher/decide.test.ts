import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../../src/contracts/model-config.js';
import { batchPolicy, decide, type BatchPolicy, type Decision, type PendingEntry } from '../../../src/batcher/decide.js';

interface Entry extends PendingEntry {
  readonly id: string;
}

/** A queued request: id, items, enqueue time; defaults batch size 1, signature 'a', no timeout. */
function e(id: string, enqueuedAt = 0, more: Partial<Entry> = {}): Entry {
  return { id, batchSize: 1, signature: 'a', enqueuedAt, deadline: undefined, timeoutAction: 'REJECT', ...more };
}

function policy(maxBatchSize: number, preferred: number[] = [], delayMs = 0): BatchPolicy {
  return batchPolicy({ name: 'm', max_batch_size: maxBatchSize, dynamic_batching: dynamic(preferred, delayMs * 1000) });
}

function dynamic(preferred: number[] = [], delayUs = 0): ModelConfig['dynamic_batching'] {
  return { preferred_batch_size: preferred, max_queue_delay_microseconds: delayUs, preserve_ordering: false, priority_levels: 0, default_priority_level: 0, priority_queue_policy: {} };
}

function run(levels: Entry[][] | Entry[], p: BatchPolicy, now = 0, freeInstances = 1): Decision<Entry> {
  const lv = Array.isArray(levels[0]) ? (levels as Entry[][]) : [levels as Entry[]];
  return decide({ levels: lv, policy: p, freeInstances, now });
}

const ids = (entries: readonly Entry[]): string[] => entries.map((x) => x.id);

function dispatched(d: Decision<Entry>): string[] {
  expect(d.kind).toBe('dispatch');
  return d.kind === 'dispatch' ? ids(d.batch) : [];
}

const many = (n: number, enqueuedAt = 0): Entry[] => Array.from({ length: n }, (_, i) => e(`r${i}`, enqueuedAt));

describe('decide: no batching', () => {
  it('sends one request per execution without dynamic_batching (default scheduler)', () => {
    const p = batchPolicy({ name: 'm', max_batch_size: 8, dynamic_batching: undefined });
    expect(p.batching).toBe(false);
    const d = run([e('a', 0, { batchSize: 4 }), e('b'), e('c')], p);
    expect(dispatched(d)).toEqual(['a']);
    expect(d.kind === 'dispatch' && d.batchSize).toBe(4);
  });

  it('sends one request per execution with max_batch_size 0, even under dynamic_batching', () => {
    const p = batchPolicy({ name: 'm', max_batch_size: 0, dynamic_batching: dynamic([], 10_000) });
    expect(p).toMatchObject({ batching: false, maxBatchSize: 1 });
    expect(dispatched(run([e('a', 0, { batchSize: 0 }), e('b')], p, 0))).toEqual(['a']);
  });

  it('still applies priorities and timeouts with max_batch_size 0', () => {
    const p = batchPolicy({ name: 'm', max_batch_size: 0, dynamic_batching: dynamic() });
    const d = run([[e('late', 5, { deadline: 3 })], [e('low', 0)]], p, 4);
    expect(dispatched(d)).toEqual(['low']);
    expect(ids(d.rejected)).toEqual(['late']);
  });
});

describe('decide: batch size', () => {
  it('with defaults sends whatever is queued, up to max_batch_size, when an instance is free', () => {
    expect(dispatched(run(many(3), policy(8)))).toEqual(['r0', 'r1', 'r2']);
    expect(dispatched(run(many(10), policy(8)))).toHaveLength(8);
  });

  it('sends the largest preferred batch size that can be formed', () => {
    const p = policy(8, [4, 2]);
    expect(p.preferredBatchSizes).toEqual([2, 4]);
    expect(dispatched(run(many(3), p))).toEqual(['r0', 'r1']);
    expect(dispatched(run(many(5), p))).toHaveLength(4);
    expect(dispatched(run(many(1), p))).toEqual(['r0']);
  });

  it('counts a request by its first dimension, 0 as 1', () => {
    const d = run([e('a', 0, { batchSize: 3 }), e('b', 0, { batchSize: 0 }), e('c', 0, { batchSize: 2 })], policy(8, [4]));
    expect(dispatched(d)).toEqual(['a', 'b']);
    expect(d.kind === 'dispatch' && d.batchSize).toBe(4);
  });

  it('ends the batch at a request that would overflow max_batch_size (no skipping ahead)', () => {
    const d = run([e('a', 0, { batchSize: 3 }), e('b', 0, { batchSize: 2 }), e('c', 0, { batchSize: 1 })], policy(4));
    expect(dispatched(d)).toEqual(['a']);
  });

  it('sends a lone request larger than every preferred size by itself', () => {
    const d = run([e('big', 0, { batchSize: 5 }), e('b')], policy(8, [2], 10));
    expect(dispatched(d)).toEqual(['big']);
  });

  it('never mixes variable-dim shapes: a mismatch ends the batch', () => {
    const queue = [e('a'), e('b'), e('c', 0, { signature: 'other' }), e('d')];
    expect(dispatched(run(queue, policy(8)))).toEqual(['a', 'b']);
    // With a delay the batch still goes at once: it cannot grow past the mismatch.
    expect(dispatched(run(queue.slice(1), policy(8, [], 10), 1))).toEqual(['b']);
  });
});

describe('decide: queue delay', () => {
  it('waits until the oldest request has waited max_queue_delay, then sends what is there', () => {
    const p = policy(8, [], 10);
    const queue = [e('a', 0), e('b', 5)];
    expect(run(queue, p, 6)).toEqual({ kind: 'wait', until: 10, rejected: [] });
    expect(dispatched(run(queue, p, 10))).toEqual(['a', 'b']);
  });

  it('sends at once when an arrival completes the max batch', () => {
    const p = policy(4, [], 10);
    expect(run(many(3), p, 2).kind).toBe('wait');
    expect(dispatched(run([...many(3), e('new', 3)], p, 3))).toHaveLength(4);
  });

  it('sends a preferred batch at once rather than wait for a larger one', () => {
    const p = policy(8, [2, 4], 10);
    expect(run(many(1), p, 1).kind).toBe('wait');
    expect(dispatched(run(many(3), p, 1))).toEqual(['r0', 'r1']);
  });

  it('past the delay sends everything up to max_batch_size, beyond the largest preferred size', () => {
    const p = policy(8, [2, 4], 10);
    expect(dispatched(run(many(5), p, 9))).toHaveLength(4);
    expect(dispatched(run(many(5), p, 10))).toHaveLength(5);
  });

  it('when no preferred size can be formed, cuts before the largest one while within the delay', () => {
    const p = policy(8, [4], 10);
    const queue = [e('a', 0, { batchSize: 3 }), e('b', 0, { batchSize: 3 })];
    expect(dispatched(run(queue, p, 1))).toEqual(['a']);
    expect(dispatched(run(queue, p, 10))).toEqual(['a', 'b']);
  });

  it('measures the delay from the oldest request in the batch, whatever its level', () => {
    const p = policy(4, [], 10);
    const levels = [[e('high', 5)], [e('low', 0)]];
    expect(run(levels, p, 9)).toEqual({ kind: 'wait', until: 10, rejected: [] });
    expect(dispatched(run(levels, p, 10))).toEqual(['high', 'low']);
  });

  it('wakes early for a deadline that falls inside the delay', () => {
    const d = run([e('a', 0, { deadline: 4 })], policy(8, [], 10), 1);
    expect(d).toEqual({ kind: 'wait', until: 4, rejected: [] });
  });
});

describe('decide: priority levels', () => {
  it('takes level 1 first, FIFO within a level, then fills from lower levels', () => {
    const levels = [
      [e('h1', 5), e('h2', 6)],
      [e('l1', 0), e('l2', 1)],
    ];
    expect(dispatched(run(levels, policy(3)))).toEqual(['h1', 'h2', 'l1']);
  });

  it('a later high-priority request goes before an earlier low-priority one', () => {
    const p = batchPolicy({ name: 'm', max_batch_size: 4, dynamic_batching: undefined });
    expect(dispatched(run([[e('high', 9)], [e('low', 0)]], p))).toEqual(['high']);
  });
});

describe('decide: timeouts', () => {
  it('REJECT: a request past its deadline is reported and never dispatched', () => {
    const d = run([e('late', 0, { deadline: 5 }), e('ok', 0, { deadline: 50 })], policy(8), 5);
    expect(ids(d.rejected)).toEqual(['late']);
    expect(dispatched(d)).toEqual(['ok']);
  });

  it('REJECT is enforced with no free instance, and the next REJECT deadline is the wake-up', () => {
    const queue = [e('late', 0, { deadline: 5 }), e('next', 0, { deadline: 8 }), e('delayed', 0, { deadline: 6, timeoutAction: 'DELAY' })];
    const d = run(queue, policy(8), 5, 0);
    expect(ids(d.rejected)).toEqual(['late']);
    expect(d).toMatchObject({ kind: 'wait', until: 8 });
  });

  it('DELAY: an expired request yields to the unexpired ones of its level but not to lower levels', () => {
    const levels = [[e('expired', 0, { deadline: 5, timeoutAction: 'DELAY' }), e('fresh', 1)], [e('low', 0)]];
    const d = run(levels, policy(3), 6);
    expect(d.rejected).toEqual([]);
    expect(dispatched(d)).toEqual(['fresh', 'expired', 'low']);
    expect(dispatched(run(levels, policy(3), 4))).toEqual(['expired', 'fresh', 'low']);
  });

  it('DELAY: an expired request still goes when nothing else waits', () => {
    expect(dispatched(run([e('x', 0, { deadline: 1, timeoutAction: 'DELAY' })], policy(8), 100))).toEqual(['x']);
  });
});

describe('decide: nothing to do', () => {
  it('is idle on an empty queue or with no free instance and no deadline', () => {
    expect(run([], policy(8))).toEqual({ kind: 'idle', rejected: [] });
    expect(run(many(3), policy(8), 0, 0)).toEqual({ kind: 'idle', rejected: [] });
  });

  it('is pure: the same snapshot gives the same decision and the queue is untouched', () => {
    const queue = [e('a', 0, { deadline: 1 }), e('b')];
    const before = JSON.stringify(queue);
    expect(run(queue, policy(8), 2)).toEqual(run(queue, policy(8), 2));
    expect(JSON.stringify(queue)).toBe(before);
  });
});

describe('batchPolicy', () => {
  it('defaults preferred sizes to [max_batch_size] and converts the delay to ms', () => {
    expect(policy(16, [], 0.25)).toEqual({ batching: true, maxBatchSize: 16, preferredBatchSizes: [16], maxQueueDelayMs: 0.25 });
    expect(policy(8, [4, 2, 4]).preferredBatchSizes).toEqual([2, 4]);
  });

  it('rejects preferred sizes outside 1..max_batch_size', () => {
    expect(() => policy(4, [8])).toThrow(/preferred/);
    expect(() => policy(4, [0])).toThrow(/preferred/);
  });
});
