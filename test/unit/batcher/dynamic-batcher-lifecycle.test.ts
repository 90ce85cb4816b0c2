// Queue policy, cancellation, failures, ordering and unload of the dynamic batcher's shell.
import { describe, expect, it } from 'vitest';
import type { InferRequest } from '../../../src/contracts/infer.js';
import type { DynamicBatchingConfig, ModelConfig, QueuePolicy } from '../../../src/contracts/model-config.js';
import { DynamicBatcher } from '../../../src/batcher/dynamic-batcher.js';
import { ConveyorError } from '../../../src/errors.js';
import { input, modelConfig, output } from '../../support/model-config.js';
import { FakeExecutor, FakeTime, flush } from './fakes.js';

function config(dynamicMore: Partial<DynamicBatchingConfig> = {}, policy: Partial<QueuePolicy> = {}): ModelConfig {
  return modelConfig({
    name: 'toy',
    max_batch_size: 8,
    input: [input('x', 'TYPE_FP32', [-1])],
    output: [output('y', 'TYPE_FP32', [-1])],
    dynamic_batching: {
      preferred_batch_size: [],
      max_queue_delay_microseconds: 0,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
      priority_queue_policy: {},
      default_queue_policy: { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 0, ...policy },
      ...dynamicMore,
    },
  });
}

function request(value: number, more: Partial<InferRequest> = {}): InferRequest {
  return { model: 'toy', parameters: {}, inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: new Float32Array(2).fill(value) }], ...more };
}

function setup(instances: number, cfg: ModelConfig) {
  const time = new FakeTime();
  const executor = new FakeExecutor(instances);
  const batcher = new DynamicBatcher({ config: cfg, version: '1', executor, clock: time, timers: time });
  return { time, executor, batcher };
}

/** Settlement of a promise, observed without awaiting it. */
function track<T>(promise: Promise<T>): () => string | undefined {
  let state: string | undefined;
  promise.then(
    () => (state = 'ok'),
    (e: ConveyorError) => (state = `${e.code}: ${e.message}`),
  );
  return () => state;
}

describe('DynamicBatcher: queue policy', () => {
  it('rejects at once with UNAVAILABLE when the queue is full, and counts it as REJECTED', async () => {
    const { batcher } = setup(1, config({}, { max_queue_size: 2 }));
    void batcher.enqueue(request(0)); // executing, not queued
    void batcher.enqueue(request(1));
    void batcher.enqueue(request(2));
    await expect(batcher.enqueue(request(3))).rejects.toMatchObject({ code: 'UNAVAILABLE', message: 'Exceeds maximum queue size', httpStatus: 503 });
    expect(batcher.numQueued).toBe(2);
    expect(batcher.stats.snapshot().inference_stats.fail.count).toBe(1);
    expect(batcher.stats.failures().REJECTED).toBe(1);
  });

  it('rejects a request whose queue timeout expires, on its timer, while every instance is busy', async () => {
    const { time, executor, batcher } = setup(1, config({}, { default_timeout_microseconds: 2000 }));
    const running = track(batcher.enqueue(request(0)));
    const waiting = track(batcher.enqueue(request(1)));
    time.advance(1.5);
    await flush();
    expect(waiting()).toBeUndefined();
    time.advance(0.5);
    await flush();
    expect(waiting()).toBe('UNAVAILABLE: Request timeout expired');
    expect(batcher.stats.snapshot().inference_stats.fail).toEqual({ count: 1, ns: 2e6 });
    executor.batches[0]!.finish();
    await flush();
    expect(running()).toBe('ok');
    expect(executor.batches).toHaveLength(1);
  });

  it('lets a request lower its timeout where the policy allows overrides', async () => {
    const { time, batcher } = setup(1, config({}, { default_timeout_microseconds: 10_000, allow_timeout_override: true }));
    void batcher.enqueue(request(0));
    const short = track(batcher.enqueue(request(1, { parameters: { timeout: 1000 } })));
    const normal = track(batcher.enqueue(request(2)));
    time.advance(1);
    await flush();
    expect([short(), normal()]).toEqual(['UNAVAILABLE: Request timeout expired', undefined]);
  });

  it('DELAY: a timed-out request is not failed but yields to requests still within their timeout', async () => {
    const cfg = config({ max_queue_delay_microseconds: 0 }, { default_timeout_microseconds: 1000, timeout_action: 'DELAY', allow_timeout_override: true });
    cfg.max_batch_size = 1;
    const { time, executor, batcher } = setup(1, cfg);
    const all = [batcher.enqueue(request(0)), batcher.enqueue(request(1))];
    time.advance(5);
    all.push(batcher.enqueue(request(2)));
    for (let i = 0; i < 3; i += 1) executor.batches[i]!.finish();
    await Promise.all(all);
    expect(executor.batches.map((b) => (b.inputs[0]!.data as Float32Array)[0])).toEqual([0, 2, 1]);
  });
});

describe('DynamicBatcher: cancellation', () => {
  it('removes an aborted request from the queue with CANCELLED', async () => {
    const { executor, batcher } = setup(1, config());
    void batcher.enqueue(request(0));
    const controller = new AbortController();
    const gone = batcher.enqueue(request(1), controller.signal);
    const kept = batcher.enqueue(request(2));
    controller.abort();
    await expect(gone).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(batcher.numQueued).toBe(1);
    executor.batches[0]!.finish();
    expect(executor.batchRows).toEqual([1, 1]);
    executor.batches[1]!.finish();
    await kept;
    expect(batcher.stats.failures().CANCELED).toBe(1);
  });

  it('refuses an already-aborted request, and lets a dispatched one finish', async () => {
    const { executor, batcher } = setup(1, config());
    await expect(batcher.enqueue(request(0), AbortSignal.abort())).rejects.toMatchObject({ code: 'CANCELLED' });
    const controller = new AbortController();
    const running = batcher.enqueue(request(1), controller.signal);
    controller.abort();
    executor.batches[0]!.finish();
    await expect(running).resolves.toMatchObject({ stats: { batchSize: 1 } });
  });
});

describe('DynamicBatcher: failures and ordering', () => {
  it('fails every request of a batch whose execution fails, counted as BACKEND', async () => {
    const { executor, batcher } = setup(1, config());
    const first = batcher.enqueue(request(0));
    const pair = [batcher.enqueue(request(1)), batcher.enqueue(request(2))];
    executor.batches[0]!.finish();
    await first;
    executor.batches[1]!.finish(new ConveyorError('INTERNAL', 'session.run failed'));
    for (const p of pair) await expect(p).rejects.toMatchObject({ code: 'INTERNAL', message: 'session.run failed' });
    const s = batcher.stats.snapshot();
    expect([s.execution_count, s.inference_count, s.inference_stats.fail.count]).toEqual([1, 1, 2]);
    expect(batcher.stats.failures().BACKEND).toBe(2);
  });

  for (const preserve of [true, false]) {
    it(`${preserve ? 'holds back' : 'does not hold back'} a later batch finishing first under preserve_ordering ${preserve}`, async () => {
      const { executor, batcher } = setup(2, config({ preserve_ordering: preserve }));
      const order: number[] = [];
      const all = [0, 1].map((v) => batcher.enqueue(request(v)).then(() => order.push(v)));
      executor.batches[1]!.finish();
      await flush();
      expect(order).toEqual(preserve ? [] : [1]);
      executor.batches[0]!.finish();
      await Promise.all(all);
      expect(order).toEqual(preserve ? [0, 1] : [1, 0]);
    });
  }
});

describe('DynamicBatcher: drain and close', () => {
  it('stops accepting, flushes the queue without waiting out the delay, and resolves when all finished', async () => {
    const { time, executor, batcher } = setup(1, config({ max_queue_delay_microseconds: 50_000 }));
    const queued = [batcher.enqueue(request(1)), batcher.enqueue(request(2))];
    expect(executor.batches).toHaveLength(0);
    const drained = track(batcher.drain());
    expect(executor.batchRows).toEqual([2]);
    await expect(batcher.enqueue(request(3))).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await flush();
    expect(drained()).toBeUndefined();
    executor.batches[0]!.finish();
    await Promise.all(queued);
    await flush();
    expect(drained()).toBe('ok');
    await batcher.close();
    expect(time.numTimers).toBe(0);
  });

  it('resolves at once when nothing is queued or running', async () => {
    const { batcher } = setup(1, config());
    await batcher.close();
    await expect(batcher.enqueue(request(1))).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });
});
