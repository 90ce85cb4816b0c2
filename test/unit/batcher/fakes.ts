// A hand-driven clock and timers, and an executor that records batches and finishes them when the
// test says so: the batching decision is under test here, not ONNX Runtime.
import type { ExecutionResult, ModelExecutor } from '../../../src/contracts/execution.js';
import type { Tensor } from '../../../src/contracts/tensors.js';
import type { Clock, Timers } from '../../../src/batcher/dynamic-batcher.js';
import { ConveyorError } from '../../../src/errors.js';

export class FakeTime implements Clock, Timers {
  private nowMs = 0;
  private nextId = 1;
  private readonly pending = new Map<number, { due: number; callback: () => void }>();

  now(): number {
    return this.nowMs;
  }

  epochMs(): number {
    return 1_700_000_000_000 + this.nowMs;
  }

  set(callback: () => void, delayMs: number): unknown {
    const id = this.nextId++;
    this.pending.set(id, { due: this.nowMs + delayMs, callback });
    return id;
  }

  clear(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  get numTimers(): number {
    return this.pending.size;
  }

  /** Moves time forward, firing due timers in due order at their due time. */
  advance(ms: number): void {
    const end = this.nowMs + ms;
    for (;;) {
      const next = [...this.pending.entries()].filter(([, t]) => t.due <= end).sort((a, b) => a[1].due - b[1].due)[0];
      if (next === undefined) break;
      this.pending.delete(next[0]);
      this.nowMs = Math.max(this.nowMs, next[1].due);
      next[1].callback();
    }
    this.nowMs = end;
  }
}

export interface RecordedBatch {
  readonly inputs: readonly Tensor[];
  readonly outputNames: readonly string[];
  /** Finishes the execution: outputs computed from the inputs, or the given error. */
  finish(error?: ConveyorError): void;
}

/**
 * `y` = 2·x (same shape as input `x`, FP32) and `n` = the batch row index (INT32 [rows, 1]), so a
 * response that got another request's rows is caught.
 */
export function compute(inputs: readonly Tensor[], names: readonly string[]): Tensor[] {
  const x = inputs.find((t) => t.name === 'x')!;
  const rows = x.shape[0] ?? 1;
  return names.map((name): Tensor => {
    if (name === 'y') return { name, datatype: 'FP32', shape: [...x.shape], data: (x.data as Float32Array).map((v) => v * 2) };
    if (name === 'n') return { name, datatype: 'INT32', shape: [rows, 1], data: Int32Array.from({ length: rows }, (_, i) => i) };
    throw new ConveyorError('INVALID_ARG', `unknown output '${name}'`);
  });
}

/**
 * A fake executor's instances as the batcher sees them: an execution takes one (the batcher must
 * only ask when one is free), and its end frees it and then tells the batcher.
 */
export abstract class FakeInstances {
  private busy = 0;
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly instances: number) {}

  get freeInstances(): number {
    return this.instances - this.busy;
  }

  onInstanceFree(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Takes an instance for `call` (named in the error when none is free). */
  protected take(call: string): void {
    if (this.busy >= this.instances) throw new Error(`${call} with no free instance`);
    this.busy += 1;
  }

  /** Frees the instance, settles the execution, then tells the batcher. */
  protected release(settle: () => void): void {
    this.busy -= 1;
    settle();
    for (const listener of this.listeners) listener();
  }
}

export class FakeExecutor extends FakeInstances implements ModelExecutor {
  readonly batches: RecordedBatch[] = [];

  constructor(
    instances: number,
    private readonly timings = { computeInputNs: 100, computeInferNs: 1000, computeOutputNs: 10 },
  ) {
    super(instances);
  }

  execute(inputs: readonly Tensor[], outputNames: readonly string[]): Promise<ExecutionResult> {
    this.take('execute()');
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = (error?: ConveyorError): void => {
        if (done) throw new Error('batch finished twice');
        done = true;
        this.release(() => (error !== undefined ? reject(error) : resolve({ outputs: compute(inputs, outputNames), timings: this.timings })));
      };
      this.batches.push({ inputs, outputNames, finish });
    });
  }

  /** Rows per recorded execution. */
  get batchRows(): number[] {
    return this.batches.map((b) => b.inputs[0]!.shape[0]!);
  }
}

/** Lets settled promises run their callbacks. */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
