import { describe, expect, it } from 'vitest';
import type { InferRequest } from '../../../src/contracts/infer.js';
import type { DynamicBatchingConfig, ModelConfig } from '../../../src/contracts/model-config.js';
import { DynamicBatcher, type BatchedResult } from '../../../src/batcher/dynamic-batcher.js';
import { input, modelConfig, output } from '../../support/model-config.js';
import { FakeExecutor, FakeTime, flush } from './fakes.js';

function dynamic(more: Partial<DynamicBatchingConfig> = {}): DynamicBatchingConfig {
  return { preferred_batch_size: [], max_queue_delay_microseconds: 0, preserve_ordering: false, priority_levels: 0, default_priority_level: 0, priority_queue_policy: {}, ...more };
}

/** A toy model: input x FP32 [-1, -1] (variable item dim), outputs y = 2x and n = row index. */
function config(more: Partial<ModelConfig> = {}): ModelConfig {
  return modelConfig({
    name: 'toy',
    max_batch_size: 8,
    input: [input('x', 'TYPE_FP32', [-1])],
    output: [output('y', 'TYPE_FP32', [-1]), output('n', 'TYPE_INT32', [1])],
    dynamic_batching: dynamic(),
    ...more,
  });
}

/** `rows` rows of `width` copies of `value`. */
function request(value: number, rows = 1, more: Partial<InferRequest> = {}, width = 2): InferRequest {
  return { model: 'toy', parameters: {}, inputs: [{ name: 'x', datatype: 'FP32', shape: [rows, width], data: new Float32Array(rows * width).fill(value) }], ...more };
}

function setup(instances: number, cfg: ModelConfig = config()) {
  const time = new FakeTime();
  const executor = new FakeExecutor(instances);
  const batcher = new DynamicBatcher({ config: cfg, version: '1', executor, clock: time, timers: time });
  return { time, executor, batcher };
}

const y = (r: BatchedResult): number[] => Array.from(r.outputs.find((t) => t.name === 'y')!.data as Float32Array);

describe('DynamicBatcher: batching under concurrency', () => {
  it('runs fewer executions than requests and gives each request its own rows', async () => {
    const { time, executor, batcher } = setup(1);
    const first = batcher.enqueue(request(1));
    expect(executor.batchRows).toEqual([1]); // an idle instance takes the first request at once
    const rest = [2, 3, 4, 5, 6].map((v) => batcher.enqueue(request(v)));
    expect(executor.batches).toHaveLength(1);
    expect(batcher.numQueued).toBe(5);

    time.advance(3);
    executor.batches[0]!.finish();
    expect(executor.batchRows).toEqual([1, 5]);
    executor.batches[1]!.finish();
    const results = await Promise.all([first, ...rest]);

    results.forEach((r, i) => {
      expect(r.outputs.map((t) => t.name)).toEqual(['y', 'n']);
      expect(y(r)).toEqual([2 * (i + 1), 2 * (i + 1)]);
    });
    expect(results.slice(1).map((r) => Array.from(r.outputs[1]!.data as Int32Array))).toEqual([[0], [1], [2], [3], [4]]);
    expect(results[3]!.stats).toEqual({ queueNs: 3e6, computeInputNs: 100, computeInferNs: 1000, computeOutputNs: 10, batchSize: 5 });
    expect(batcher.numQueued + batcher.numInFlight).toBe(0);
  });

  it('records statistics the Triton way', async () => {
    const { time, executor, batcher } = setup(1);
    const all = [batcher.enqueue(request(1)), batcher.enqueue(request(2, 2)), batcher.enqueue(request(3))];
    time.advance(4);
    executor.batches[0]!.finish();
    await flush(); // delivered at t = 4
    time.advance(1);
    executor.batches[1]!.finish();
    await Promise.all(all);

    const s = batcher.stats.snapshot();
    expect(s).toMatchObject({ name: 'toy', version: '1', inference_count: 4, execution_count: 2, last_inference: time.epochMs() });
    expect(s.inference_stats.success).toEqual({ count: 3, ns: 4e6 + 5e6 + 5e6 });
    expect(s.inference_stats.queue).toEqual({ count: 3, ns: 0 + 4e6 + 4e6 });
    expect(s.inference_stats.compute_infer).toEqual({ count: 3, ns: 3000 });
    expect(s.inference_stats.fail).toEqual({ count: 0, ns: 0 });
    expect(s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count, b.compute_input.ns])).toEqual([
      [1, 1, 100],
      [3, 1, 100],
    ]);
  });
});

describe('DynamicBatcher: delay and preferred sizes', () => {
  it('holds a partial batch for max_queue_delay, counted from the oldest request, with one timer', () => {
    const { time, executor, batcher } = setup(2, config({ dynamic_batching: dynamic({ max_queue_delay_microseconds: 5000 }) }));
    void batcher.enqueue(request(1));
    time.advance(2);
    void batcher.enqueue(request(2));
    expect(executor.batches).toHaveLength(0);
    expect(time.numTimers).toBe(1);
    time.advance(2.5);
    expect(executor.batches).toHaveLength(0);
    time.advance(0.5);
    expect(executor.batchRows).toEqual([2]);
    expect(time.numTimers).toBe(0);
  });

  it('sends at once when an arrival completes a preferred batch, and drops the timer', () => {
    const { time, executor, batcher } = setup(1, config({ dynamic_batching: dynamic({ preferred_batch_size: [4], max_queue_delay_microseconds: 100_000 }) }));
    for (const v of [1, 2, 3]) void batcher.enqueue(request(v));
    expect(executor.batches).toHaveLength(0);
    expect(time.numTimers).toBe(1);
    void batcher.enqueue(request(4));
    expect(executor.batchRows).toEqual([4]);
    expect(time.numTimers).toBe(0);
  });

  it('never mixes variable-dim shapes in one batch', async () => {
    const { executor, batcher } = setup(1);
    const busy = batcher.enqueue(request(0));
    const queued = [batcher.enqueue(request(1, 1, {}, 2)), batcher.enqueue(request(2, 1, {}, 3)), batcher.enqueue(request(3, 1, {}, 2))];
    for (let i = 0; i < 4; i += 1) executor.batches[i]!.finish();
    const results = await Promise.all([busy, ...queued]);
    expect(executor.batches.map((b) => b.inputs[0]!.shape)).toEqual([
      [1, 2],
      [1, 2],
      [1, 3],
      [1, 2],
    ]);
    expect(results.map((r) => y(r)[0])).toEqual([0, 2, 4, 6]);
  });
});

describe('DynamicBatcher: scheduling without batching', () => {
  it('without dynamic_batching runs each request alone, in arrival order', async () => {
    const { executor, batcher } = setup(1, config({ dynamic_batching: undefined }));
    const all = [1, 2, 3].map((v) => batcher.enqueue(request(v)));
    for (let i = 0; i < 3; i += 1) executor.batches[i]!.finish();
    await Promise.all(all);
    expect(executor.batchRows).toEqual([1, 1, 1]);
  });

  it('with max_batch_size 0 passes each request’s tensors through untouched', async () => {
    const cfg = config({ max_batch_size: 0, input: [input('x', 'TYPE_FP32', [2, 2])] });
    const { executor, batcher } = setup(1, cfg);
    const requests = [request(1, 2), request(2, 2)];
    const all = requests.map((r) => batcher.enqueue(r));
    executor.batches[0]!.finish();
    executor.batches[1]!.finish();
    const results = await Promise.all(all);
    expect(executor.batches.map((b) => b.inputs)).toEqual(requests.map((r) => r.inputs));
    expect(executor.batches[0]!.inputs).toBe(requests[0]!.inputs);
    expect(results.map((r) => r.stats.batchSize)).toEqual([1, 1]);
    expect(batcher.stats.snapshot().batch_stats.map((b) => b.batch_size)).toEqual([1]);
  });

  it('refuses a request larger than max_batch_size', async () => {
    const { batcher } = setup(1);
    await expect(batcher.enqueue(request(1, 9))).rejects.toMatchObject({ code: 'INVALID_ARG' });
  });
});

describe('DynamicBatcher: priorities and outputs', () => {
  it('serves a later high-priority request before an earlier low-priority one', async () => {
    const cfg = config({ max_batch_size: 1, dynamic_batching: dynamic({ priority_levels: 2, default_priority_level: 2 }) });
    const { executor, batcher } = setup(1, cfg);
    const all = [batcher.enqueue(request(0)), batcher.enqueue(request(1)), batcher.enqueue(request(2, 1, { parameters: { priority: 1 } }))];
    for (let i = 0; i < 3; i += 1) executor.batches[i]!.finish();
    await Promise.all(all);
    expect(executor.batches.map((b) => (b.inputs[0]!.data as Float32Array)[0])).toEqual([0, 2, 1]);
  });

  it('asks for the union of the batch’s outputs and answers each request with its own', async () => {
    const { executor, batcher } = setup(1);
    const busy = batcher.enqueue(request(0));
    const a = batcher.enqueue(request(1, 1, { outputs: [{ name: 'n', parameters: {} }] }));
    const b = batcher.enqueue(request(2, 1, { outputs: [{ name: 'y', parameters: {} }] }));
    executor.batches[0]!.finish();
    executor.batches[1]!.finish();
    await busy;
    expect(executor.batches[1]!.outputNames).toEqual(['y', 'n']);
    expect((await a).outputs.map((t) => t.name)).toEqual(['n']);
    expect(y(await b)).toEqual([4, 4]);
  });
});
