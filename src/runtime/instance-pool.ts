// A model version's instances (instance_group): N worker threads, each owning one session.
// Implements the batcher's ModelExecutor view: how many are free, run a batch on a free one.

import type { Worker } from 'node:worker_threads';
import type { ExecutionResult, ModelExecutor } from '../contracts/execution.js';
import type { Tensor } from '../contracts/tensors.js';
import type { Device, FromInstanceWorker, InstanceWorkerData, SessionMetadata, ToInstanceWorker } from '../contracts/worker-messages.js';
import { ConveyorError, ExecutionRejected, unavailable } from '../errors.js';
import { detached, transferList } from './ort-tensors.js';
import { spawnWorker } from './spawn-worker.js';

export interface InstancePoolOptions {
  readonly modelPath: string;
  readonly count: number;
  readonly device: Device;
  /** Threads per session; 0 = ORT's default. */
  readonly intraOpNumThreads: number;
  /** For logs: model and version. */
  readonly label: string;
  readonly log: (line: string) => void;
}

interface Instance {
  readonly worker: Worker;
  busy: boolean;
  alive: boolean;
  pending?: { id: number; resolve: (r: ExecutionResult) => void; reject: (e: Error) => void };
}

const INSTANCE_WORKER = new URL('./instance-worker.ts', import.meta.url);

export class InstancePool implements ModelExecutor {
  private readonly listeners: (() => void)[] = [];
  private nextId = 1;
  private idleWaiters: (() => void)[] = [];

  private constructor(
    private readonly instances: Instance[],
    readonly metadata: SessionMetadata,
    readonly device: Device,
  ) {}

  /** Starts every instance and resolves once all have loaded the model (rejects if any fails). */
  static async start(options: InstancePoolOptions): Promise<InstancePool> {
    const data: InstanceWorkerData = {
      modelPath: options.modelPath,
      device: options.device,
      intraOpNumThreads: options.intraOpNumThreads,
      label: options.label,
    };
    const workers = Array.from({ length: options.count }, () => spawnWorker(INSTANCE_WORKER, data));
    try {
      const ready = await Promise.all(workers.map((w) => waitReady(w)));
      const first = ready[0]!;
      if (first.note) options.log(`${options.label}: ${first.note}`);
      const instances = workers.map((worker): Instance => ({ worker, busy: false, alive: true }));
      const pool = new InstancePool(instances, first.metadata, first.device);
      instances.forEach((instance) => pool.watch(instance, options));
      return pool;
    } catch (error) {
      await Promise.all(workers.map((w) => w.terminate()));
      throw error;
    }
  }

  /** Per instance, whether its worker still runs (the metrics' liveness gauge). */
  get workersAlive(): boolean[] {
    return this.instances.map((i) => i.alive);
  }

  get freeInstances(): number {
    return this.instances.filter((i) => i.alive && !i.busy).length;
  }

  onInstanceFree(listener: () => void): void {
    this.listeners.push(listener);
  }

  execute(inputs: readonly Tensor[], outputNames: readonly string[]): Promise<ExecutionResult> {
    const instance = this.instances.find((i) => i.alive && !i.busy);
    if (!instance) return Promise.reject(unavailable('no free model instance'));
    instance.busy = true;
    const id = this.nextId++;
    const owned = inputs.map(detached);
    const message: ToInstanceWorker = { type: 'run', id, inputs: owned, outputNames };
    return new Promise<ExecutionResult>((resolve, reject) => {
      instance.pending = { id, resolve, reject };
      instance.worker.postMessage(message, transferList(owned));
    });
  }

  /** Waits for running executions, then stops every worker and releases the sessions. */
  async close(): Promise<void> {
    while (this.instances.some((i) => i.busy && i.alive)) {
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
    await Promise.all(
      this.instances.map(async (instance) => {
        if (instance.alive) instance.worker.postMessage({ type: 'close' } satisfies ToInstanceWorker);
        instance.alive = false;
        await instance.worker.terminate();
      }),
    );
  }

  private watch(instance: Instance, options: InstancePoolOptions): void {
    instance.worker.on('message', (message: FromInstanceWorker) => {
      const pending = instance.pending;
      if (!pending || (message.type !== 'result' && message.type !== 'error') || message.id !== pending.id) return;
      instance.pending = undefined;
      instance.busy = false;
      if (message.type === 'result') pending.resolve({ outputs: message.outputs, timings: message.timings });
      else pending.reject(new ExecutionRejected(`onnxruntime: ${message.message}`));
      this.released();
    });
    const fail = (reason: string): void => {
      if (!instance.alive) return;
      instance.alive = false;
      options.log(`${options.label}: instance stopped (${reason})`);
      instance.pending?.reject(new ConveyorError('INTERNAL', `model instance stopped: ${reason}`));
      instance.pending = undefined;
      instance.busy = false;
      this.released();
    };
    instance.worker.on('error', (error) => fail(error.message));
    instance.worker.on('exit', (code) => fail(`exit code ${code}`));
  }

  private released(): void {
    if (!this.instances.some((i) => i.busy && i.alive)) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      waiters.forEach((w) => w());
    }
    for (const listener of this.listeners) listener();
  }
}

function waitReady(worker: Worker): Promise<{ metadata: SessionMetadata; device: Device; note?: string }> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: FromInstanceWorker): void => {
      if (message.type === 'ready') {
        cleanup();
        resolve(message);
      } else if (message.type === 'fatal') {
        cleanup();
        reject(new ConveyorError('INTERNAL', `failed to load model: ${message.message}`));
      }
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(new ConveyorError('INTERNAL', `model instance failed to start: ${error.message}`));
    };
    const cleanup = (): void => {
      worker.off('message', onMessage);
      worker.off('error', onError);
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
  });
}
