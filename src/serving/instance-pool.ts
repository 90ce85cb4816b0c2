// A model version's instances (instance_group): N worker threads, each owning one session.
// Implements the batcher's ModelExecutor view: how many are free, run a batch on a free one.
// Instances are supervised: one that dies fails only the batch it was running, is restarted
// after a backoff, and a crash loop makes the pool answer every batch with UNAVAILABLE.

import type { Worker } from 'node:worker_threads';
import type { ExecutionResult, ModelExecutor } from '../contracts/execution.js';
import { detached, transferList, type Tensor } from '../contracts/tensors.js';
import type { Device, FromInstanceWorker, InstanceWorkerData, SessionMetadata, ToInstanceWorker } from '../contracts/worker-messages.js';
import { ExecutionRejected, unavailable } from '../errors.js';
import { INSTANCE_WORKER_ENTRY } from '../instance-worker/entry.js';
import type { RestartPolicy } from '../threads/restart-policy.js';
import { spawnWorker } from '../threads/spawn-worker.js';
import { SupervisedInstances, workerReady } from '../threads/supervised-instances.js';

export interface InstancePoolOptions {
  readonly modelPath: string;
  readonly count: number;
  readonly device: Device;
  /** Threads per session; 0 = ORT's default. */
  readonly intraOpNumThreads: number;
  /** false: ORT's intra-op threads sleep between parallel sections; absent: ORT's default. */
  readonly intraOpSpinning?: boolean | undefined;
  /** For logs: model and version. */
  readonly label: string;
  readonly log: (line: string) => void;
  /** TEST-ONLY (fault-injection.ts): passed to every instance worker. */
  readonly faultInjection?: InstanceWorkerData['faultInjection'];
  readonly restartPolicy?: RestartPolicy;
  /** Nice steps the instance threads run below the server (--compute-thread-nice); absent: the same priority. */
  readonly threadNice?: number;
}

interface Instance {
  worker: Worker;
  busy: boolean;
  alive: boolean;
  pending?: { id: number; resolve: (r: ExecutionResult) => void; reject: (e: Error) => void };
}

export class InstancePool extends SupervisedInstances<Instance> implements ModelExecutor {
  private nextId = 1;

  private constructor(
    instances: Instance[],
    readonly metadata: SessionMetadata,
    readonly device: Device,
    private readonly options: InstancePoolOptions,
    private readonly data: InstanceWorkerData,
  ) {
    super(instances, options);
    instances.forEach((instance) => this.watch(instance));
  }

  protected isBusy(instance: Instance): boolean {
    return instance.busy;
  }

  /** Starts every instance and resolves once all have loaded the model (rejects if any fails). */
  static async start(options: InstancePoolOptions): Promise<InstancePool> {
    const data: InstanceWorkerData = {
      modelPath: options.modelPath,
      device: options.device,
      intraOpNumThreads: options.intraOpNumThreads,
      intraOpSpinning: options.intraOpSpinning,
      label: options.label,
      ...(options.faultInjection ? { faultInjection: options.faultInjection } : {}),
      ...(options.threadNice ? { threadNice: options.threadNice } : {}),
    };
    const workers = Array.from({ length: options.count }, () => spawnWorker(INSTANCE_WORKER_ENTRY, data));
    try {
      const ready = await Promise.all(workers.map((w) => workerReady<FromInstanceWorker>(w)));
      const first = ready[0]!;
      if (first.note) options.log(`${options.label}: ${first.note}`);
      const instances = workers.map((worker): Instance => ({ worker, busy: false, alive: true }));
      return new InstancePool(instances, first.metadata, first.device, options, data);
    } catch (error) {
      await Promise.all(workers.map((w) => w.terminate()));
      throw error;
    }
  }

  execute(inputs: readonly Tensor[], outputNames: readonly string[]): Promise<ExecutionResult> {
    if (this.supervisor.gaveUp) return Promise.reject(unavailable(`model ${this.options.label} is unavailable: ${this.supervisor.status().reason}`));
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
    await this.untilIdle();
    this.closing = true;
    this.supervisor.stop();
    await Promise.all(
      this.instances.map(async (instance) => {
        if (instance.alive) instance.worker.postMessage({ type: 'close' } satisfies ToInstanceWorker);
        instance.alive = false;
        await instance.worker.terminate();
      }),
    );
  }

  private watch(instance: Instance): void {
    const { worker } = instance;
    worker.on('message', (message: FromInstanceWorker) => {
      if (message.type === 'fatal') {
        this.crashed(instance, worker, message.message);
        void worker.terminate();
        return;
      }
      const pending = instance.pending;
      if (!pending || (message.type !== 'result' && message.type !== 'error') || message.id !== pending.id) return;
      instance.pending = undefined;
      instance.busy = false;
      if (message.type === 'result') pending.resolve({ outputs: message.outputs, timings: message.timings });
      else pending.reject(new ExecutionRejected(`onnxruntime: ${message.message}`));
      this.released();
    });
    worker.on('error', (error) => this.crashed(instance, worker, `uncaught error: ${error.message}`));
    worker.on('exit', (code) => this.crashed(instance, worker, `worker exited with code ${code}`));
  }

  /** The first report of `worker`'s death fails only the batch it was running. */
  private crashed(instance: Instance, worker: Worker, cause: string): void {
    if (instance.worker !== worker || !instance.alive || this.closing) return;
    instance.alive = false;
    worker.removeAllListeners('message');
    this.options.log(`${this.options.label}: instance stopped (${cause})`);
    const slot = this.instances.indexOf(instance);
    instance.pending?.reject(unavailable(`model instance ${this.options.label}/${slot} crashed (${cause}) while running this request's batch; retry later`));
    instance.pending = undefined;
    instance.busy = false;
    this.supervisor.crashed(slot, cause);
    this.released();
  }

  /** A fresh worker (and session) in the dead instance's slot; the supervisor calls it after the backoff. */
  protected respawn(slot: number): Promise<void> {
    return this.replaceWorker(slot, INSTANCE_WORKER_ENTRY, this.data, (instance) => this.watch(instance));
  }
}
