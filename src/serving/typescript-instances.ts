// A TypeScript model version's instances (instance_group count N): N worker threads, each running
// one instance of the model's class. Implements the batcher's ModelExecutor view as an executor
// that takes a batch as its requests (executeRequests): each request ends with its own outputs
// or error. Instances are supervised like ONNX ones: one whose thread dies (process.exit, an
// uncaught error) fails only the requests of its batch and restarts after a backoff; one that runs
// a batch past execute_timeout_secs without finishing or sending a response is terminated, its
// requests failed DEADLINE_EXCEEDED, and restarted the same way. BLS calls from the model run here,
// on the main thread, through the repository's routing (the serving path clients take).

import type { Worker } from 'node:worker_threads';
import type { ExecutionRequest, ExecutionResult, ModelExecutor, RequestOutcome, RequestsExecutionResult } from '../contracts/execution.js';
import type { InferRequest, InferResponse } from '../contracts/infer.js';
import type { ModelConfig } from '../contracts/model-config.js';
import { detached, transferList, type Tensor } from '../contracts/tensors.js';
import type { BlsRequest, FromTypeScriptWorker, ToTypeScriptWorker, TypeScriptWorkerData, WireError } from '../contracts/typescript-model.js';
import { ConveyorError, asConveyorError, unavailable } from '../errors.js';
import type { RestartPolicy } from '../threads/restart-policy.js';
import { spawnWorker } from '../threads/spawn-worker.js';
import { SupervisedInstances, workerReady } from '../threads/supervised-instances.js';
import { TYPESCRIPT_MODEL_WORKER_ENTRY } from '../typescript-model-worker/entry.js';
import type { ModelRouting } from './served-model.js';
import { wireDataType } from './validate-infer.js';

export interface TypeScriptInstancesOptions {
  readonly config: ModelConfig;
  readonly count: number;
  /** Each instance's workerData but its instance name and index. */
  readonly data: (index: number) => TypeScriptWorkerData;
  /** The longest a batch may go without finishing or sending a response, in ms. */
  readonly executeTimeoutMs: number;
  /** Routing for the model's BLS calls; absent, they fail UNAVAILABLE. */
  readonly models?: ModelRouting;
  readonly label: string;
  readonly log: (line: string) => void;
  readonly restartPolicy?: RestartPolicy;
}

interface RunningRequest {
  readonly seq: number;
  readonly request: ExecutionRequest;
  outcome?: RequestOutcome;
  /** Aborts the request's BLS calls: its client went away, it completed, or its instance died. */
  readonly calls: AbortController;
  readonly detach: () => void;
}

interface RunningBatch {
  readonly id: number;
  readonly requests: RunningRequest[];
  executed: boolean;
  timings: ExecutionResult['timings'];
  readonly resolve: (result: RequestsExecutionResult) => void;
  timer?: ReturnType<typeof setTimeout>;
}

interface Instance {
  readonly slot: number;
  worker: Worker;
  alive: boolean;
  batch?: RunningBatch;
  /** BLS calls in flight from this instance, by the worker's call id. */
  readonly calls: Map<number, AbortController>;
}

const NO_TIMINGS = { computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 };

const errorOf = (wire: WireError): ConveyorError => new ConveyorError(wire.code, wire.message);
const wire = (error: unknown): WireError => {
  const e = asConveyorError(error);
  const code =
    e.code === 'INVALID_ARG' || e.code === 'NOT_FOUND' || e.code === 'UNAVAILABLE' || e.code === 'UNSUPPORTED' || e.code === 'CANCELLED' || e.code === 'DEADLINE_EXCEEDED' ? e.code : 'INTERNAL';
  return { code, message: e.message };
};

export class TypeScriptInstances extends SupervisedInstances<Instance> implements ModelExecutor {
  private nextBatch = 1;
  private nextSeq = 1;

  private constructor(
    instances: Instance[],
    private readonly options: TypeScriptInstancesOptions,
  ) {
    super(instances, options);
    instances.forEach((instance) => this.watch(instance));
  }

  protected isBusy(instance: Instance): boolean {
    return instance.batch !== undefined;
  }

  /** Starts every instance; resolves once each has imported the model and run initialize() (rejects if any fails). */
  static async start(options: TypeScriptInstancesOptions): Promise<TypeScriptInstances> {
    const workers = Array.from({ length: options.count }, (_, i) => spawnWorker(TYPESCRIPT_MODEL_WORKER_ENTRY, options.data(i)));
    try {
      await Promise.all(workers.map((w) => workerReady<FromTypeScriptWorker>(w)));
    } catch (error) {
      await Promise.all(workers.map((w) => w.terminate()));
      throw error;
    }
    return new TypeScriptInstances(
      workers.map((worker, slot) => ({ slot, worker, alive: true, calls: new Map() })),
      options,
    );
  }

  execute(): Promise<ExecutionResult> {
    return Promise.reject(new ConveyorError('INTERNAL', 'a TypeScript model takes a batch as its requests (executeRequests), never stacked'));
  }

  executeRequests(requests: readonly ExecutionRequest[]): Promise<RequestsExecutionResult> {
    if (this.supervisor.gaveUp) return Promise.reject(unavailable(`model ${this.options.label} is unavailable: ${this.supervisor.status().reason}`));
    const instance = this.instances.find((i) => i.alive && !i.batch);
    if (!instance) return Promise.reject(unavailable('no free model instance'));
    return new Promise<RequestsExecutionResult>((resolve) => {
      const running = requests.map((request) => this.track(instance, request));
      const batch: RunningBatch = { id: this.nextBatch++, requests: running, executed: false, timings: NO_TIMINGS, resolve };
      instance.batch = batch;
      const wires = running.map(({ seq, request }) => ({
        seq,
        id: request.id ?? '',
        inputs: request.inputs.map(detached),
        requestedOutputs: request.outputNames,
        parameters: request.parameters,
      }));
      this.armTimer(instance, batch);
      const message: ToTypeScriptWorker = { type: 'execute', batch: batch.id, requests: wires };
      instance.worker.postMessage(message, transferList(wires.flatMap((w) => w.inputs)));
    });
  }

  /** Waits for running batches, lets each instance finalize(), then stops the workers. */
  async close(): Promise<void> {
    await this.untilIdle();
    this.closing = true;
    this.supervisor.stop();
    await Promise.all(this.instances.map((instance) => this.finalize(instance)));
  }

  /** finalize() gets execute_timeout_secs; the worker is terminated either way. */
  private async finalize(instance: Instance): Promise<void> {
    const { worker } = instance;
    if (instance.alive) {
      instance.alive = false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.executeTimeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          resolve();
        };
        worker.on('message', (message: FromTypeScriptWorker) => {
          if (message.type === 'finalized') done();
          else if (message.type === 'fatal') this.options.log(`${this.options.label}: ${message.message}`);
        });
        worker.once('exit', done);
        worker.postMessage({ type: 'finalize' } satisfies ToTypeScriptWorker);
      });
    }
    await worker.terminate();
  }

  private track(instance: Instance, request: ExecutionRequest): RunningRequest {
    const seq = this.nextSeq++;
    const calls = new AbortController();
    const signal = request.signal;
    // The client went away mid-batch: the model sees its request cancelled and its BLS calls end.
    const onAbort = (): void => {
      calls.abort(new ConveyorError('CANCELLED', 'request cancelled'));
      if (instance.alive) instance.worker.postMessage({ type: 'cancel', seq } satisfies ToTypeScriptWorker);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    return { seq, request, calls, detach: () => signal?.removeEventListener('abort', onAbort) };
  }

  private armTimer(instance: Instance, batch: RunningBatch): void {
    if (batch.timer !== undefined) clearTimeout(batch.timer);
    batch.timer = setTimeout(() => this.timedOut(instance, batch), this.options.executeTimeoutMs);
  }

  private watch(instance: Instance): void {
    const { worker } = instance;
    worker.on('message', (message: FromTypeScriptWorker) => this.received(instance, worker, message));
    worker.on('error', (error) => this.crashed(instance, worker, `uncaught error: ${error.message}`));
    worker.on('exit', (code) => this.crashed(instance, worker, `worker exited with code ${code}`));
  }

  private received(instance: Instance, worker: Worker, message: FromTypeScriptWorker): void {
    if (instance.worker !== worker || !instance.alive) return;
    switch (message.type) {
      case 'response':
        this.responded(instance, message);
        return;
      case 'executed':
        this.executed(instance, message);
        return;
      case 'bls':
        void this.call(instance, message.call, message.seq, message.request, message.stream);
        return;
      case 'bls-cancel':
        instance.calls.get(message.call)?.abort(new ConveyorError('CANCELLED', 'the model stopped reading this call'));
        return;
      case 'fatal':
        this.crashed(instance, worker, message.message);
        void worker.terminate();
        return;
      default:
        return;
    }
  }

  private responded(instance: Instance, message: Extract<FromTypeScriptWorker, { type: 'response' }>): void {
    const batch = instance.batch;
    const running = batch?.requests.find((r) => r.seq === message.seq);
    if (!batch || !running || running.outcome) return;
    // A response is progress: a decoupled model streaming for long is not hung.
    this.armTimer(instance, batch);
    if (message.error) {
      running.outcome = { ok: false, error: errorOf(message.error) };
    } else if (message.outputs) {
      const problem = this.checkOutputs(message.outputs);
      if (problem) running.outcome = { ok: false, error: new ConveyorError('INTERNAL', problem) };
      else if (running.request.onResponse) running.request.onResponse(message.outputs);
      else if (message.final) running.outcome = { ok: true, outputs: message.outputs };
    }
    if (message.final && !running.outcome) running.outcome = { ok: true, outputs: [] };
    if (running.outcome) this.ended(running);
    this.completeIfDone(instance, batch);
  }

  /** An output the config does not declare, or of another datatype, is the model's bug: the request fails naming it. */
  private checkOutputs(outputs: readonly Tensor[]): string | undefined {
    for (const output of outputs) {
      const declared = this.options.config.output.find((o) => o.name === output.name);
      if (!declared) return `the model returned output '${output.name}', which its config does not declare`;
      const expected = wireDataType(declared.data_type);
      if (output.datatype !== expected) return `the model returned output '${output.name}' as ${output.datatype}, but its config declares ${expected}`;
    }
    return undefined;
  }

  private executed(instance: Instance, message: Extract<FromTypeScriptWorker, { type: 'executed' }>): void {
    const batch = instance.batch;
    if (!batch || batch.id !== message.batch) return;
    batch.executed = true;
    batch.timings = message.timings;
    for (const running of batch.requests) {
      if (running.outcome) continue;
      if (message.error) {
        running.outcome = { ok: false, error: new ConveyorError(message.error.code, `model '${this.options.label}' failed to execute the batch: ${message.error.message}`) };
        this.ended(running);
      } else if (!running.request.onResponse) {
        running.outcome = { ok: false, error: new ConveyorError('INTERNAL', 'the model sent no response for this request') };
        this.ended(running);
      }
    }
    this.completeIfDone(instance, batch);
  }

  /** A request has its outcome: its client signal and BLS calls are let go. */
  private ended(running: RunningRequest): void {
    running.detach();
    if (!running.calls.signal.aborted) running.calls.abort(new ConveyorError('CANCELLED', 'the request that made this call has completed'));
  }

  /** The batch ends once execute() returned and every request has its outcome (a decoupled one: its final response). */
  private completeIfDone(instance: Instance, batch: RunningBatch): void {
    if (!batch.executed || batch.requests.some((r) => !r.outcome)) return;
    this.finish(instance, batch);
  }

  private finish(instance: Instance, batch: RunningBatch): void {
    if (instance.batch !== batch) return;
    clearTimeout(batch.timer);
    instance.batch = undefined;
    batch.resolve({ outcomes: batch.requests.map((r) => r.outcome!), timings: batch.timings });
    this.released();
  }

  /** Fails what the batch has not answered with `error`; requests already complete keep their outcome. */
  private abandon(instance: Instance, error: ConveyorError): void {
    const batch = instance.batch;
    for (const controller of instance.calls.values()) controller.abort(error);
    instance.calls.clear();
    if (!batch) return;
    for (const running of batch.requests) {
      if (running.outcome) continue;
      running.outcome = { ok: false, error };
      this.ended(running);
    }
    this.finish(instance, batch);
  }

  private timedOut(instance: Instance, batch: RunningBatch): void {
    if (instance.batch !== batch || !instance.alive) return;
    const seconds = this.options.executeTimeoutMs / 1000;
    const cause = `execute() ran past execute_timeout_secs (${seconds} s) without finishing or sending a response`;
    const { worker } = instance;
    this.crashed(instance, worker, cause, new ConveyorError('DEADLINE_EXCEEDED', `model ${this.options.label}: ${cause}; the instance was restarted`));
    void worker.terminate();
  }

  /** The first report of `worker`'s death fails only the requests of the batch it was running. */
  private crashed(instance: Instance, worker: Worker, cause: string, error?: ConveyorError): void {
    if (instance.worker !== worker || !instance.alive || this.closing) return;
    instance.alive = false;
    this.options.log(`${this.options.label}: instance stopped (${cause})`);
    this.abandon(instance, error ?? unavailable(`model instance ${this.options.label}/${instance.slot} stopped (${cause}) while running this request's batch; retry later`));
    this.supervisor.crashed(instance.slot, cause);
    this.released();
  }

  protected respawn(slot: number): Promise<void> {
    return this.replaceWorker(slot, TYPESCRIPT_MODEL_WORKER_ENTRY, this.options.data(slot), (instance) => this.watch(instance));
  }

  /** Runs one BLS call on behalf of request `seq` and answers the worker with each response. */
  private async call(instance: Instance, id: number, seq: number, request: BlsRequest, stream: boolean): Promise<void> {
    const { worker } = instance;
    const answer = (message: Omit<Extract<ToTypeScriptWorker, { type: 'bls-answer' }>, 'type' | 'call'>, transfer: ArrayBuffer[] = []): void => {
      if (instance.worker === worker && instance.alive) worker.postMessage({ type: 'bls-answer', call: id, ...message } satisfies ToTypeScriptWorker, transfer);
    };
    const parent = instance.batch?.requests.find((r) => r.seq === seq);
    if (!parent || parent.outcome) {
      answer({ error: { code: 'CANCELLED', message: 'the request that made this call has completed' }, final: true });
      return;
    }
    const controller = new AbortController();
    const onParentAbort = (): void => controller.abort(parent.calls.signal.reason);
    parent.calls.signal.addEventListener('abort', onParentAbort, { once: true });
    instance.calls.set(id, controller);
    const inferRequest: InferRequest = {
      model: request.model,
      ...(request.version ? { version: request.version } : {}),
      parameters: request.parameters,
      inputs: request.inputs,
      ...(request.outputs ? { outputs: request.outputs } : {}),
    };
    const send = (response: InferResponse, final: boolean): void => {
      const outputs = response.outputs.map(detached);
      answer({ response: { model: response.model, version: response.version, outputs }, final }, transferList(outputs));
    };
    try {
      if (!this.options.models) throw unavailable('model-to-model calls are not available here (no model routing)');
      const served = this.options.models.resolve(request.model, request.version);
      const decoupled = served.config.model_transaction_policy.decoupled;
      if (stream) {
        if (!served.inferStream)
          throw new ConveyorError('UNSUPPORTED', `model '${request.model}' cannot be streamed from a TypeScript model (its backend '${served.config.backend}' has no stream for model-to-model calls)`);
        for await (const event of served.inferStream(inferRequest, controller.signal)) {
          if (event.response) send(event.response, event.final);
          else if (event.final) answer({ final: true });
        }
      } else {
        if (decoupled) throw new ConveyorError('UNSUPPORTED', `model '${request.model}' is decoupled: call it with inferStream()`);
        send(await served.infer(inferRequest, controller.signal), true);
      }
    } catch (error) {
      answer({ error: wire(controller.signal.aborted ? (controller.signal.reason ?? error) : error), final: true });
    } finally {
      parent.calls.signal.removeEventListener('abort', onParentAbort);
      instance.calls.delete(id);
    }
  }
}
