// The dynamic batcher's shell around decide(): it owns the queue, one timer and the promises of
// waiting requests, asks decide() what to do whenever something changes (an arrival, a free
// instance, the timer, an abort), stacks and dispatches batches, and splits the outputs back.
// Clock and timer functions are injected so tests drive time by hand.

import type { ExecutionRequest, ExecutionResult, ExecutionTimings, ModelExecutor } from '../contracts/execution.js';
import type { InferRequest } from '../contracts/infer.js';
import type { ModelConfig } from '../contracts/model-config.js';
import type { Tensor } from '../contracts/tensors.js';
import { ConveyorError, asConveyorError, invalidArg, unavailable } from '../errors.js';
import { batchPolicy, decide, type BatchPolicy } from './decide.js';
import { executeIsolating, type GroupOutcome } from './isolate.js';
import { RequestQueue, type QueueEntry } from './queue.js';
import { itemSignature, splitOutputs, stackInputs } from './stack.js';
import { ModelStatsRecorder, type FailureReason } from './stats.js';

export interface Clock {
  /** Monotonic milliseconds (fractions allowed). */
  now(): number;
  /** Wall-clock milliseconds since the epoch (last_inference). */
  epochMs(): number;
}

export interface Timers {
  set(callback: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

export const systemClock: Clock = { now: () => performance.now(), epochMs: () => Date.now() };
export const systemTimers: Timers = {
  // Rounded up: a timer that fires a fraction early would only find the delay unexpired.
  set: (callback, delayMs) => setTimeout(callback, Math.ceil(delayMs)),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** What one request went through, in ns; compute durations are those of its whole batch. */
export interface RequestStats extends ExecutionTimings {
  readonly queueNs: number;
  /** Items in the execution the request was part of. */
  readonly batchSize: number;
}

export interface BatchedResult {
  /** The requested outputs (all the model's when none were named), this request's rows only. */
  readonly outputs: Tensor[];
  readonly stats: RequestStats;
}

export interface DynamicBatcherOptions {
  /** Reads name, max_batch_size, input[].is_shape_tensor, output[].name, dynamic_batching. */
  readonly config: ModelConfig;
  readonly version: string;
  /**
   * The version's instances. Assumed to take an instance synchronously: `freeInstances` drops
   * before `execute()` returns, so one pass can fill every free instance.
   */
  readonly executor: ModelExecutor;
  readonly stats?: ModelStatsRecorder;
  readonly clock?: Clock;
  readonly timers?: Timers;
}

interface Job {
  readonly request: InferRequest;
  readonly arrivedAt: number;
  /** First dimension of the request; 0 for a model that does not batch. */
  readonly rows: number;
  readonly outputNames: readonly string[];
  readonly resolve: (result: BatchedResult) => void;
  readonly reject: (error: ConveyorError) => void;
  /** The client's signal, passed on to an executor that takes requests (it cancels their own work). */
  readonly signal: AbortSignal | undefined;
  /** A decoupled request's responses, as the executor receives them. */
  readonly onResponse: ((outputs: readonly Tensor[]) => void) | undefined;
  detach?: () => void;
}

/** A batch's outcome: per request its outputs, or (an executor that takes requests) its own failure. */
type Outcome = { ok: true; outputs: (Tensor[] | ConveyorError)[]; timings: ExecutionTimings } | { ok: false; error: ConveyorError };

const msToNs = (ms: number): number => Math.max(0, Math.round(ms * 1e6));

export class DynamicBatcher {
  readonly stats: ModelStatsRecorder;
  private readonly config: ModelConfig;
  private readonly executor: ModelExecutor;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly policy: BatchPolicy;
  private readonly queue: RequestQueue<Job>;
  private readonly shapeTensors: ReadonlySet<string>;
  private readonly modelOutputs: readonly string[];
  private readonly preserveOrdering: boolean;
  private accepting = true;
  private closed = false;
  private inFlight = 0;
  private pumping = false;
  private pumpAgain = false;
  private timer: unknown = undefined;
  private timerDue: number | undefined = undefined;
  /** Settles when the latest dispatched batch has delivered (preserve_ordering). */
  private lastDelivery: Promise<void> = Promise.resolve();
  private drained: { promise: Promise<void>; resolve: () => void } | undefined;
  /** Retries of a refused batch's parts, each taking an instance synchronously when started. */
  private readonly retries: (() => void)[] = [];

  constructor(options: DynamicBatcherOptions) {
    this.config = options.config;
    this.executor = options.executor;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.stats = options.stats ?? new ModelStatsRecorder(options.config.name, options.version);
    this.policy = batchPolicy(options.config);
    this.queue = new RequestQueue(options.config.dynamic_batching);
    this.shapeTensors = new Set(options.config.input.filter((i) => i.is_shape_tensor).map((i) => i.name));
    this.modelOutputs = options.config.output.map((o) => o.name);
    this.preserveOrdering = options.config.dynamic_batching?.preserve_ordering ?? false;
    this.executor.onInstanceFree(() => this.pump());
  }

  /** Requests waiting in the queue (nv_inference_pending_request_count). */
  get numQueued(): number {
    return this.queue.size;
  }

  /** Requests whose batch is executing. */
  get numInFlight(): number {
    return this.inFlight;
  }

  /**
   * Queues a request; settles when its batch has run. Rejects with UNAVAILABLE when the queue is
   * full, the queue timeout expires or the batcher is draining, CANCELLED when `signal` aborts
   * while the request still waits (once dispatched, its batch runs to the end; an executor that
   * takes requests gets the signal and may end the request's own work). `onResponse` receives a
   * decoupled request's responses; it then resolves with no outputs once the last was sent.
   */
  enqueue(request: InferRequest, signal?: AbortSignal, onResponse?: (outputs: readonly Tensor[]) => void): Promise<BatchedResult> {
    return new Promise<BatchedResult>((resolve, reject) => {
      const job: Job = {
        request,
        arrivedAt: this.clock.now(),
        rows: this.rowsOf(request),
        outputNames: this.outputNamesOf(request),
        resolve,
        reject,
        signal,
        onResponse,
      };
      try {
        this.admit(job, signal);
      } catch (error) {
        const e = asConveyorError(error);
        this.fail(job, e, e.code === 'UNAVAILABLE' && this.accepting ? 'REJECTED' : e.code === 'CANCELLED' ? 'CANCELED' : 'OTHER');
      }
    });
  }

  /** Stops accepting (UNAVAILABLE); resolves once queued and executing requests have finished. */
  drain(): Promise<void> {
    this.accepting = false;
    this.drained ??= (() => {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      return { promise, resolve };
    })();
    // Queued requests no longer wait for a fuller batch: none is coming.
    this.pump();
    this.checkDrained();
    return this.drained.promise;
  }

  /** drain(), then let go of the timer and ignore the executor from then on. */
  async close(): Promise<void> {
    await this.drain();
    this.closed = true;
    this.setTimer(undefined);
  }

  private rowsOf(request: InferRequest): number {
    return this.config.max_batch_size > 0 ? (request.inputs[0]?.shape[0] ?? 0) : 0;
  }

  private outputNamesOf(request: InferRequest): readonly string[] {
    return request.outputs === undefined || request.outputs.length === 0 ? this.modelOutputs : request.outputs.map((o) => o.name);
  }

  private admit(job: Job, signal: AbortSignal | undefined): void {
    if (!this.accepting) throw unavailable(`model '${this.config.name}' is unloading and accepts no new requests`);
    if (signal?.aborted) throw new ConveyorError('CANCELLED', 'request cancelled');
    const max = this.config.max_batch_size;
    if (max > 0 && job.rows > max) {
      throw invalidArg(`inference request batch-size must be <= ${max} for '${this.config.name}'`);
    }
    const signature = this.policy.batching ? itemSignature(job.request.inputs, this.shapeTensors) : '';
    const entry = this.queue.add({ payload: job, batchSize: job.rows, signature, parameters: job.request.parameters }, job.arrivedAt);
    if (signal !== undefined) {
      const onAbort = (): void => this.abort(entry);
      signal.addEventListener('abort', onAbort, { once: true });
      job.detach = () => signal.removeEventListener('abort', onAbort);
    }
    this.pump();
  }

  private abort(entry: QueueEntry<Job>): void {
    if (!this.queue.removeOne(entry)) return;
    this.fail(entry.payload, new ConveyorError('CANCELLED', 'request cancelled'), 'CANCELED');
    this.pump();
  }

  private fail(job: Job, error: ConveyorError, reason: FailureReason): void {
    job.detach?.();
    this.stats.recordFailure(msToNs(this.clock.now() - job.arrivedAt), reason);
    job.reject(error);
    this.checkDrained();
  }

  /** Runs decide() until it has nothing more to send now, then arms the timer it asks for. */
  private pump(): void {
    if (this.closed) return;
    // A dispatch may call back into pump (an executor freeing an instance synchronously).
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      for (;;) {
        this.pumpAgain = false;
        while (this.retries.length > 0 && this.executor.freeInstances > 0) this.retries.shift()!();
        // Queued retries of a refused batch go first: new batches wait for the instances they need.
        if (this.retries.length > 0) return;
        const policy = this.accepting ? this.policy : { ...this.policy, maxQueueDelayMs: 0 };
        const decision = decide({ levels: this.queue.view, policy, freeInstances: this.executor.freeInstances, now: this.clock.now() });
        if (decision.rejected.length > 0) {
          this.queue.remove(decision.rejected);
          for (const entry of decision.rejected) this.fail(entry.payload, unavailable('Request timeout expired'), 'REJECTED');
        }
        if (decision.kind === 'dispatch') {
          this.queue.remove(decision.batch);
          void this.run(
            decision.batch.map((entry) => entry.payload),
            decision.batchSize,
          );
          continue;
        }
        this.setTimer(decision.kind === 'wait' ? decision.until : undefined);
        if (!this.pumpAgain) return;
      }
    } finally {
      this.pumping = false;
    }
  }

  private setTimer(until: number | undefined): void {
    if (until === this.timerDue) return;
    if (this.timer !== undefined) this.timers.clear(this.timer);
    this.timer = undefined;
    this.timerDue = until;
    if (until === undefined) return;
    this.timer = this.timers.set(
      () => {
        this.timer = undefined;
        this.timerDue = undefined;
        this.pump();
      },
      Math.max(0, until - this.clock.now()),
    );
  }

  /**
   * Executes one batch and settles its requests. Never rejects. A batch the runtime refuses is
   * bisected and retried (isolate.ts), so only the requests at fault fail.
   */
  private async run(jobs: Job[], batchSize: number): Promise<void> {
    for (const job of jobs) job.detach?.();
    this.inFlight += jobs.length;
    const startedAt = this.clock.now();
    const previous = this.lastDelivery;
    let delivered!: () => void;
    if (this.preserveOrdering) this.lastDelivery = new Promise<void>((r) => (delivered = r));
    // preserve_ordering delivers after the previous batch, so outcomes wait until then.
    const held: [readonly Job[], Outcome][] = [];
    const settle = (group: readonly Job[], outcome: GroupOutcome<Outcome>): void => {
      const settled: Outcome = outcome.ok ? outcome.value : outcome;
      if (this.preserveOrdering) held.push([group, settled]);
      else this.deliver(group, this.sizeOf(group, jobs, batchSize), startedAt, settled);
    };
    await executeIsolating(jobs, (group) => this.attempt(group, group === jobs), settle);
    if (this.preserveOrdering) {
      await previous;
      for (const [group, outcome] of held) this.deliver(group, this.sizeOf(group, jobs, batchSize), startedAt, outcome);
      delivered();
    }
    this.inFlight -= jobs.length;
    this.checkDrained();
  }

  /**
   * One execution of `group`: the dispatched batch runs on the instance pump() reserved for it;
   * a retry of part of it waits for a free instance ahead of new batches.
   */
  private async attempt(group: readonly Job[], dispatched: boolean): Promise<Outcome> {
    if (this.executor.executeRequests) return this.executeRequests(group);
    const result = await (dispatched ? this.execute(group) : this.executeWhenFree(group));
    return { ok: true, outputs: this.split(group, result), timings: result.timings };
  }

  /**
   * A batch for an executor that takes it as its requests (never refused as a whole for its
   * inputs, so never retried in parts): each request ends with its outputs or its own error.
   */
  private async executeRequests(jobs: readonly Job[]): Promise<Outcome> {
    const requests = jobs.map(
      (job): ExecutionRequest => ({
        ...(job.request.id ? { id: job.request.id } : {}),
        inputs: job.request.inputs,
        outputNames: job.outputNames,
        parameters: job.request.parameters,
        ...(job.signal ? { signal: job.signal } : {}),
        ...(job.onResponse ? { onResponse: job.onResponse } : {}),
      }),
    );
    const result = await this.executor.executeRequests!(requests);
    const outputs = jobs.map((job, i): Tensor[] | ConveyorError => {
      const outcome = result.outcomes[i];
      if (outcome === undefined) return new ConveyorError('INTERNAL', 'execution returned no outcome for this request');
      if (!outcome.ok) return asConveyorError(outcome.error);
      if (job.onResponse) return [];
      try {
        return this.pick(job, outcome.outputs);
      } catch (error) {
        return asConveyorError(error);
      }
    });
    return { ok: true, outputs, timings: result.timings };
  }

  /** Items in `group`: the dispatched batch's size, or its rows for a retried part. */
  private sizeOf(group: readonly Job[], dispatched: readonly Job[], batchSize: number): number {
    return group === dispatched ? batchSize : group.reduce((n, job) => n + Math.max(1, job.rows), 0);
  }

  /** A retry: runs when an instance is free, before pump() dispatches anything new. */
  private executeWhenFree(jobs: readonly Job[]): Promise<ExecutionResult> {
    return new Promise<ExecutionResult>((resolve, reject) => {
      this.retries.push(() => this.execute(jobs).then(resolve, reject));
      this.pump();
    });
  }

  private execute(jobs: readonly Job[]): Promise<ExecutionResult> {
    const wanted = new Set(jobs.flatMap((job) => job.outputNames));
    // Model order first, then any name the model lacks so the executor reports it.
    const names = [...this.modelOutputs.filter((n) => wanted.has(n)), ...[...wanted].filter((n) => !this.modelOutputs.includes(n))];
    const only = jobs.length === 1 ? jobs[0] : undefined;
    const inputs = only !== undefined ? only.request.inputs : stackInputs(jobs.map((job) => job.request.inputs));
    return this.executor.execute(inputs, names);
  }

  /** Each job's requested outputs, in the order it asked for them. */
  private split(jobs: readonly Job[], result: ExecutionResult): Tensor[][] {
    const perJob =
      jobs.length === 1
        ? [[...result.outputs]]
        : splitOutputs(
            result.outputs,
            jobs.map((job) => job.rows),
          );
    return jobs.map((job, i) => this.pick(job, perJob[i]!));
  }

  /** The job's requested outputs out of those its execution returned, in the order it asked for them. */
  private pick(job: Job, outputs: readonly Tensor[]): Tensor[] {
    return job.outputNames.map((name) => {
      const output = outputs.find((t) => t.name === name);
      if (output === undefined) throw new ConveyorError('INTERNAL', `execution returned no output '${name}'`);
      return output;
    });
  }

  private deliver(jobs: readonly Job[], batchSize: number, startedAt: number, outcome: Outcome): void {
    if (!outcome.ok) {
      for (const job of jobs) this.fail(job, outcome.error, 'BACKEND');
      return;
    }
    const now = this.clock.now();
    const epochMs = this.clock.epochMs();
    const t = outcome.timings;
    this.stats.recordExecution(batchSize, t, epochMs);
    jobs.forEach((job, i) => {
      const outputs = outcome.outputs[i]!;
      if (outputs instanceof ConveyorError) {
        this.fail(job, outputs, 'BACKEND');
        return;
      }
      const queueNs = msToNs(startedAt - job.arrivedAt);
      this.stats.recordSuccess({ requestNs: msToNs(now - job.arrivedAt), queueNs, ...t }, epochMs);
      job.resolve({ outputs, stats: { queueNs, ...t, batchSize } });
    });
  }

  private checkDrained(): void {
    if (this.drained === undefined || this.queue.size > 0 || this.inFlight > 0) return;
    this.setTimer(undefined);
    this.drained.resolve();
  }
}
