// Batch isolation: the bisect policy with a fake executor that refuses any group holding a
// poisoned item, then the dynamic batcher retrying a refused batch on a one-instance executor.
import { describe, expect, it } from 'vitest';
import type { ExecutionResult, ModelExecutor } from '../../../src/contracts/execution.js';
import type { InferRequest } from '../../../src/contracts/infer.js';
import type { ModelConfig } from '../../../src/contracts/model-config.js';
import type { Tensor } from '../../../src/contracts/tensors.js';
import { DynamicBatcher } from '../../../src/batcher/dynamic-batcher.js';
import { bisect, executeIsolating, type GroupOutcome } from '../../../src/batcher/isolate.js';
import { ConveyorError, ExecutionRejected } from '../../../src/errors.js';
import { input, modelConfig, output } from '../../support/model-config.js';
import { compute, FakeInstances, FakeTime } from './fakes.js';

interface Item {
  readonly id: number;
  readonly poisoned: boolean;
}

/** Runs the policy over `items`; returns each item's outcome and the groups executed. */
async function isolate(items: readonly Item[], fail: (group: readonly Item[]) => ConveyorError | undefined) {
  const executed: number[][] = [];
  const outcomes = new Map<number, GroupOutcome<string>>();
  await executeIsolating(
    items,
    async (group) => {
      executed.push(group.map((i) => i.id));
      await Promise.resolve();
      const error = fail(group);
      if (error) throw error;
      return `ran ${group.map((i) => i.id).join(',')}`;
    },
    (group, outcome) =>
      group.forEach((item) => {
        expect(outcomes.has(item.id)).toBe(false); // every item settles exactly once
        outcomes.set(item.id, outcome);
      }),
  );
  return { executed, outcomes };
}

const items = (n: number, poisoned: readonly number[]): Item[] => Array.from({ length: n }, (_, id) => ({ id, poisoned: poisoned.includes(id) }));
const refusePoison = (group: readonly Item[]) => (group.some((i) => i.poisoned) ? new ExecutionRejected('onnxruntime: indices element out of data bounds') : undefined);

describe('executeIsolating', () => {
  it('runs a healthy batch once', async () => {
    const { executed, outcomes } = await isolate(items(4, []), refusePoison);
    expect(executed).toEqual([[0, 1, 2, 3]]);
    expect([...outcomes.values()].every((o) => o.ok)).toBe(true);
  });

  it('bisects a refused batch so only the culprit fails, with INVALID_ARG', async () => {
    const { executed, outcomes } = await isolate(items(8, [5]), refusePoison);
    for (const [id, outcome] of outcomes) {
      if (id === 5) expect(outcome).toMatchObject({ ok: false, error: { code: 'INVALID_ARG' } });
      else expect(outcome.ok).toBe(true);
    }
    const failed = outcomes.get(5)!;
    expect(!failed.ok && failed.error.message).toBe("the model could not run on this request's input: onnxruntime: indices element out of data bounds");
    // 8 → 4+4 → 2+2 (of the bad half) → 1+1: five executions beyond the first.
    expect(executed).toEqual([[0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3], [4, 5, 6, 7], [4, 5], [6, 7], [4], [5]]);
  });

  it('finds several culprits and treats a refused single request as its own fault', async () => {
    const { outcomes } = await isolate(items(7, [0, 6]), refusePoison);
    expect(
      [...outcomes.entries()]
        .filter(([, o]) => !o.ok)
        .map(([id]) => id)
        .sort(),
    ).toEqual([0, 6]);
    const alone = await isolate(items(1, [0]), refusePoison);
    expect(alone.executed).toEqual([[0]]);
    expect(alone.outcomes.get(0)).toMatchObject({ ok: false, error: { code: 'INVALID_ARG' } });
  });

  it('does not retry failures that are not the inputs (a worker that died)', async () => {
    const { executed, outcomes } = await isolate(items(4, [1]), () => new ConveyorError('INTERNAL', 'model instance stopped: exit code 1'));
    expect(executed).toEqual([[0, 1, 2, 3]]);
    expect([...outcomes.values()].every((o) => !o.ok && o.error.code === 'INTERNAL')).toBe(true);
  });

  it('bisect splits into halves, the first taking the odd item', () => {
    expect(bisect([1, 2, 3, 4, 5])).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    expect(bisect([1, 2])).toEqual([[1], [2]]);
  });
});

/** One instance that finishes each execution on the next tick and refuses any batch holding a negative x. */
class PoisonExecutor extends FakeInstances implements ModelExecutor {
  readonly rows: number[] = [];

  constructor() {
    super(1);
  }

  execute(inputs: readonly Tensor[], outputNames: readonly string[]): Promise<ExecutionResult> {
    this.take('execute()');
    this.rows.push(inputs[0]!.shape[0]!);
    return new Promise((resolve, reject) => {
      setImmediate(() =>
        this.release(() => {
          if ((inputs[0]!.data as Float32Array).some((v) => v < 0)) reject(new ExecutionRejected('onnxruntime: Gather: indices out of bounds'));
          else resolve({ outputs: compute(inputs, outputNames), timings: { computeInputNs: 1, computeInferNs: 1, computeOutputNs: 1 } });
        }),
      );
    });
  }
}

const toy: ModelConfig = modelConfig({
  name: 'toy',
  max_batch_size: 8,
  input: [input('x', 'TYPE_FP32', [-1])],
  output: [output('y', 'TYPE_FP32', [-1])],
  dynamic_batching: { preferred_batch_size: [5], max_queue_delay_microseconds: 1_000_000, preserve_ordering: false, priority_levels: 0, default_priority_level: 0, priority_queue_policy: {} },
});
const request = (value: number): InferRequest => ({ model: 'toy', parameters: {}, inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: new Float32Array(2).fill(value) }] });

describe('DynamicBatcher: a refused batch', () => {
  it('is retried in parts so the neighbours of the bad request get their own results', async () => {
    const time = new FakeTime();
    const executor = new PoisonExecutor();
    const batcher = new DynamicBatcher({ config: toy, version: '1', executor, clock: time, timers: time });
    const values = [1, 2, -3, 4, 5, 6];
    const pending = values.map((v) => batcher.enqueue(request(v)));
    time.advance(1000); // the sixth request's delay expires while the first five run
    const settled = await Promise.allSettled(pending);
    // Five stacked and refused; the sixth takes the freed instance before the retries are queued
    // (they are a few microtasks later); then 3 (refused) and 2, then 2 and 1 (the culprit).
    expect(executor.rows).toEqual([5, 1, 3, 2, 2, 1]);
    settled.forEach((result, i) => {
      if (values[i]! < 0) {
        expect(result.status).toBe('rejected');
        expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'INVALID_ARG' });
      } else {
        expect(result.status).toBe('fulfilled');
        const y = (result as PromiseFulfilledResult<{ outputs: Tensor[] }>).value.outputs[0]!.data as Float32Array;
        expect(Array.from(y)).toEqual([2 * values[i]!, 2 * values[i]!]);
      }
    });
    expect(batcher.stats.failures().BACKEND).toBe(1);
    await batcher.close();
  });
});
