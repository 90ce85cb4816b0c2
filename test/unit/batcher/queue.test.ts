import { describe, expect, it } from 'vitest';
import type { DynamicBatchingConfig, QueuePolicy } from '../../../src/contracts/model-config.js';
import type { Parameters } from '../../../src/contracts/infer.js';
import { RequestQueue } from '../../../src/batcher/queue.js';
import { ConveyorError } from '../../../src/errors.js';

function queuePolicy(more: Partial<QueuePolicy> = {}): QueuePolicy {
  return { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 0, ...more };
}

function dynamic(more: Partial<DynamicBatchingConfig> = {}): DynamicBatchingConfig {
  return { preferred_batch_size: [], max_queue_delay_microseconds: 0, preserve_ordering: false, priority_levels: 0, default_priority_level: 0, priority_queue_policy: {}, ...more };
}

const add = (q: RequestQueue<string>, payload: string, parameters: Parameters = {}, now = 0) => q.add({ payload, batchSize: 1, signature: '', parameters }, now);

const payloads = (q: RequestQueue<string>) => q.view.map((level) => level.map((entry) => entry.payload));

describe('RequestQueue: priority levels', () => {
  const q = new RequestQueue<string>(dynamic({ priority_levels: 3, default_priority_level: 2 }));

  it('maps priority 1..levels to its level, and 0 or out-of-range priorities to the default level', () => {
    expect(q.levelOf({ priority: 1 })).toBe(0);
    expect(q.levelOf({ priority: 3 })).toBe(2);
    expect(q.levelOf({})).toBe(1);
    expect(q.levelOf({ priority: 0 })).toBe(1);
    expect(q.levelOf({ priority: 7 })).toBe(1);
    expect(q.levelOf({ priority: 1n })).toBe(0);
  });

  it('keeps FIFO order within each level', () => {
    const fresh = new RequestQueue<string>(dynamic({ priority_levels: 2, default_priority_level: 2 }));
    add(fresh, 'a');
    add(fresh, 'b', { priority: 1 });
    add(fresh, 'c');
    add(fresh, 'd', { priority: 1 });
    expect(payloads(fresh)).toEqual([
      ['b', 'd'],
      ['a', 'c'],
    ]);
    expect(fresh.size).toBe(4);
  });

  it('has one level, ignoring priorities, without priority_levels or dynamic_batching', () => {
    for (const q1 of [new RequestQueue<string>(dynamic()), new RequestQueue<string>(undefined)]) {
      add(q1, 'a', { priority: 2 });
      add(q1, 'b', { priority: 1 });
      expect(payloads(q1)).toEqual([['a', 'b']]);
    }
  });

  it('rejects malformed priority and timeout parameters', () => {
    expect(() => q.levelOf({ priority: -1 })).toThrow(/priority/);
    expect(() => q.levelOf({ priority: 1.5 })).toThrow(/priority/);
    expect(() => q.levelOf({ priority: 'high' })).toThrow(/priority/);
    expect(() => q.timeoutUs(0, { timeout: true })).toThrow(/timeout/);
  });
});

describe('RequestQueue: queue policy', () => {
  it('rejects at once with UNAVAILABLE "Exceeds maximum queue size" when the level is full', () => {
    const q = new RequestQueue<string>(dynamic({ default_queue_policy: queuePolicy({ max_queue_size: 2 }) }));
    add(q, 'a');
    add(q, 'b');
    let error: unknown;
    try {
      add(q, 'c');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConveyorError);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', message: 'Exceeds maximum queue size' });
    expect(q.size).toBe(2);
  });

  it('applies max_queue_size per priority level, with priority_queue_policy overriding the default', () => {
    const q = new RequestQueue<string>(
      dynamic({ priority_levels: 2, default_priority_level: 2, default_queue_policy: queuePolicy({ max_queue_size: 1 }), priority_queue_policy: { '1': queuePolicy({ max_queue_size: 2 }) } }),
    );
    add(q, 'low');
    expect(() => add(q, 'low2')).toThrow('Exceeds maximum queue size');
    add(q, 'h1', { priority: 1 });
    add(q, 'h2', { priority: 1 });
    expect(() => add(q, 'h3', { priority: 1 })).toThrow('Exceeds maximum queue size');
  });

  it('sets the deadline from the default timeout, with that level’s timeout action', () => {
    const q = new RequestQueue<string>(dynamic({ default_queue_policy: queuePolicy({ default_timeout_microseconds: 5000, timeout_action: 'DELAY' }) }));
    expect(add(q, 'a', {}, 100)).toMatchObject({ enqueuedAt: 100, deadline: 105, timeoutAction: 'DELAY' });
  });

  it('lets a request lower, never raise, the timeout, and only where overrides are allowed', () => {
    const allow = new RequestQueue<string>(dynamic({ default_queue_policy: queuePolicy({ default_timeout_microseconds: 5000, allow_timeout_override: true }) }));
    expect(allow.timeoutUs(0, { timeout: 1000 })).toBe(1000);
    expect(allow.timeoutUs(0, { timeout: 9000 })).toBe(5000);
    expect(allow.timeoutUs(0, { timeout: 0 })).toBe(5000);
    const deny = new RequestQueue<string>(dynamic({ default_queue_policy: queuePolicy({ default_timeout_microseconds: 5000 }) }));
    expect(deny.timeoutUs(0, { timeout: 1000 })).toBe(5000);
  });

  it('ignores a request timeout when the default is 0 (no timeout), as Triton does', () => {
    const q = new RequestQueue<string>(dynamic({ default_queue_policy: queuePolicy({ allow_timeout_override: true }) }));
    expect(q.timeoutUs(0, { timeout: 1000 })).toBe(0);
    expect(add(q, 'a', { timeout: 1000 }).deadline).toBeUndefined();
  });
});

describe('RequestQueue: removal', () => {
  it('removes a dispatched batch and single aborted entries, keeping the order of the rest', () => {
    const q = new RequestQueue<string>(dynamic({ priority_levels: 2, default_priority_level: 2 }));
    const [a, b, , d] = ['a', 'b', 'c', 'd'].map((p, i) => add(q, p, { priority: i % 2 === 0 ? 1 : 2 }));
    q.remove([a!, b!]);
    expect(payloads(q)).toEqual([['c'], ['d']]);
    expect(q.removeOne(d!)).toBe(true);
    expect(q.removeOne(d!)).toBe(false);
    expect(q.size).toBe(1);
    expect(payloads(q)).toEqual([['c'], []]);
  });
});
