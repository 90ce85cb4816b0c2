// The dynamic batcher with an executor that takes a batch as its requests (a TypeScript model's
// execute(requests)): requests are batched as for a stacked model, but each ends with its own
// outputs or its own error, a failed execution fails the whole batch, a request cancelled while
// queued never reaches the model, and one cancelled after dispatch has its signal passed on.
import { describe, expect, it } from 'vitest';
import type { ExecutionRequest, ModelExecutor, RequestOutcome, RequestsExecutionResult } from '../../../src/contracts/execution.js';
import type { InferRequest } from '../../../src/contracts/infer.js';
import type { Tensor } from '../../../src/contracts/tensors.js';
import { DynamicBatcher } from '../../../src/batcher/dynamic-batcher.js';
import { ConveyorError } from '../../../src/errors.js';
import { input, modelConfig, output } from '../../support/model-config.js';
import { FakeInstances, FakeTime, flush } from './fakes.js';

const TIMINGS = { computeInputNs: 100, computeInferNs: 1000, computeOutputNs: 10 };

interface RecordedRequests {
  readonly requests: readonly ExecutionRequest[];
  /** Ends the execution: each request's outcome from `outcome` (default: y = 2x), or the whole batch's failure. */
  finish(outcome?: (request: ExecutionRequest, index: number) => RequestOutcome): void;
  fail(error: ConveyorError): void;
}

/** y = 2·x per request (its own rows, never stacked with the others). */
function doubled(request: ExecutionRequest): RequestOutcome {
  const x = request.inputs.find((t) => t.name === 'x')!;
  const y: Tensor = { name: 'y', datatype: 'FP32', shape: [...x.shape], data: (x.data as Float32Array).map((v) => v * 2) };
  return { ok: true, outputs: [y] };
}

/** One instance taking requests; each execution is held until the test ends it. */
class FakeRequestsExecutor extends FakeInstances implements ModelExecutor {
  readonly executions: RecordedRequests[] = [];

  constructor() {
    super(1);
  }

  execute(): never {
    throw new Error('a requests executor is never handed a stacked batch');
  }

  executeRequests(requests: readonly ExecutionRequest[]): Promise<RequestsExecutionResult> {
    this.take('executeRequests()');
    return new Promise((resolve, reject) => {
      this.executions.push({
        requests,
        finish: (outcome = doubled) => this.release(() => resolve({ outcomes: requests.map(outcome), timings: TIMINGS })),
        fail: (error) => this.release(() => reject(error)),
      });
    });
  }
}

function setup() {
  const config = modelConfig({
    name: 'ts-model',
    max_batch_size: 8,
    input: [input('x', 'TYPE_FP32', [-1])],
    output: [output('y', 'TYPE_FP32', [-1])],
    dynamic_batching: { preferred_batch_size: [], max_queue_delay_microseconds: 0, preserve_ordering: false, priority_levels: 0, default_priority_level: 0, priority_queue_policy: {} },
  });
  const time = new FakeTime();
  const executor = new FakeRequestsExecutor();
  const batcher = new DynamicBatcher({ config, version: '1', executor, clock: time, timers: time });
  return { executor, batcher };
}

function request(value: number, id: string): InferRequest {
  return { model: 'ts-model', id, parameters: {}, inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: new Float32Array(2).fill(value) }] };
}

const yOf = (outputs: readonly Tensor[]): number[] => Array.from(outputs.find((t) => t.name === 'y')!.data as Float32Array);

/** Settles without throwing: the value or the error. */
const settled = <T>(promise: Promise<T>): Promise<{ value?: T; error?: ConveyorError }> =>
  promise.then(
    (value) => ({ value }),
    (error: ConveyorError) => ({ error }),
  );

describe('DynamicBatcher with an executor that takes requests', () => {
  it('batches queued requests and gives each its own outputs', async () => {
    const { executor, batcher } = setup();
    const first = batcher.enqueue(request(1, 'a'));
    const rest = [2, 3, 4].map((v) => batcher.enqueue(request(v, `r${v}`)));
    expect(executor.executions.map((e) => e.requests.length)).toEqual([1]);
    executor.executions[0]!.finish();
    await flush();
    expect(executor.executions.map((e) => e.requests.length)).toEqual([1, 3]);
    expect(executor.executions[1]!.requests.map((r) => r.id)).toEqual(['r2', 'r3', 'r4']);
    executor.executions[1]!.finish();
    expect(yOf((await first).outputs)).toEqual([2, 2]);
    expect((await Promise.all(rest)).map((r) => yOf(r.outputs))).toEqual([
      [4, 4],
      [6, 6],
      [8, 8],
    ]);
    const stats = batcher.stats.snapshot();
    expect(stats.inference_count).toBe(4);
    expect(stats.execution_count).toBe(2);
  });

  it('fails only the request whose outcome is an error', async () => {
    const { executor, batcher } = setup();
    const blocker = batcher.enqueue(request(0, 'blocker'));
    const batch = ['ok1', 'bad', 'ok2'].map((id, i) => settled(batcher.enqueue(request(i + 1, id))));
    executor.executions[0]!.finish();
    await flush();
    executor.executions[1]!.finish((r, i) => (r.id === 'bad' ? { ok: false, error: new ConveyorError('INVALID_ARG', `request ${i} is bad`) } : doubled(r)));
    await blocker;
    const [ok1, bad, ok2] = await Promise.all(batch);
    expect(yOf(ok1!.value!.outputs)).toEqual([2, 2]);
    expect(bad!.error).toMatchObject({ code: 'INVALID_ARG', message: 'request 1 is bad' });
    expect(yOf(ok2!.value!.outputs)).toEqual([6, 6]);
    // Triton's reason for a failure the model reported.
    expect(batcher.stats.failures().BACKEND).toBe(1);
  });

  it('fails every request of a batch whose execution fails', async () => {
    const { executor, batcher } = setup();
    const blocker = batcher.enqueue(request(0, 'blocker'));
    const batch = ['a', 'b'].map((id) => settled(batcher.enqueue(request(1, id))));
    executor.executions[0]!.finish();
    await flush();
    executor.executions[1]!.fail(new ConveyorError('INTERNAL', 'execute() threw'));
    await blocker;
    for (const outcome of await Promise.all(batch)) expect(outcome.error).toMatchObject({ code: 'INTERNAL', message: 'execute() threw' });
    expect(batcher.stats.failures().BACKEND).toBe(2);
    // The instance is free again: the next request runs.
    const next = batcher.enqueue(request(5, 'next'));
    executor.executions[2]!.finish();
    expect(yOf((await next).outputs)).toEqual([10, 10]);
  });

  it('never hands the model a request cancelled while queued', async () => {
    const { executor, batcher } = setup();
    const blocker = batcher.enqueue(request(0, 'blocker'));
    const controller = new AbortController();
    const cancelled = settled(batcher.enqueue(request(1, 'cancelled'), controller.signal));
    const kept = batcher.enqueue(request(2, 'kept'));
    controller.abort();
    expect((await cancelled).error).toMatchObject({ code: 'CANCELLED' });
    executor.executions[0]!.finish();
    await flush();
    expect(executor.executions[1]!.requests.map((r) => r.id)).toEqual(['kept']);
    executor.executions[1]!.finish();
    await blocker;
    expect(yOf((await kept).outputs)).toEqual([4, 4]);
    expect(batcher.stats.failures().CANCELED).toBe(1);
  });

  it('passes a dispatched request its signal, so the model can end its own work', async () => {
    const { executor, batcher } = setup();
    const controller = new AbortController();
    const running = settled(batcher.enqueue(request(1, 'running'), controller.signal));
    const seen = executor.executions[0]!.requests[0]!.signal!;
    expect(seen.aborted).toBe(false);
    controller.abort();
    expect(seen.aborted).toBe(true);
    // The model answers the cancelled request with its own error; the batcher reports that one.
    executor.executions[0]!.finish(() => ({ ok: false, error: new ConveyorError('CANCELLED', 'the model stopped: request cancelled') }));
    expect((await running).error).toMatchObject({ code: 'CANCELLED' });
  });
});
