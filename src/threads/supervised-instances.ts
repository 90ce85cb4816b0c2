// What every pool of model instances on worker threads shares, whatever runs in them (an ONNX
// session, a TypeScript model): the slots and their liveness, the supervisor that restarts a dead
// instance after a backoff, the batcher's "an instance is free" signal, a close that waits for
// running work, and starting a worker until it says it is ready. The pools add what their
// workers speak.

import type { Worker } from 'node:worker_threads';
import { ConveyorError } from '../errors.js';
import type { RestartPolicy } from './restart-policy.js';
import { spawnWorker } from './spawn-worker.js';
import { WorkerSupervisor, type SupervisionStatus } from './worker-supervisor.js';

/** One instance slot: its current worker (a restart replaces it) and whether that worker runs. */
export interface InstanceSlot {
  worker: Worker;
  alive: boolean;
}

export interface SupervisedInstancesOptions {
  /** For logs: model and version. */
  readonly label: string;
  readonly log: (line: string) => void;
  readonly restartPolicy?: RestartPolicy | undefined;
}

/** What a worker first says: ready (with whatever it reports), or fatal (it could not load). */
export type StartupMessage = { readonly type: 'ready' } | { readonly type: 'fatal'; readonly message: string } | { readonly type: string };

export abstract class SupervisedInstances<I extends InstanceSlot> {
  protected readonly supervisor: WorkerSupervisor;
  /** Set once close() begins: deaths are then expected, and a finished restart is discarded. */
  protected closing = false;
  private readonly freeListeners: (() => void)[] = [];
  private idleWaiters: (() => void)[] = [];

  protected constructor(
    protected readonly instances: I[],
    options: SupervisedInstancesOptions,
  ) {
    this.supervisor = new WorkerSupervisor({
      label: `${options.label} instance`,
      numWorkers: instances.length,
      log: options.log,
      respawn: (slot) => this.respawn(slot),
      // Queued requests must not wait for an instance that will never come back.
      onGiveUp: () => this.released(),
      ...(options.restartPolicy ? { policy: options.restartPolicy } : {}),
    });
  }

  /** Whether the instance is running work now. */
  protected abstract isBusy(instance: I): boolean;

  /** A fresh worker in a dead instance's slot; the supervisor calls it after the backoff. */
  protected abstract respawn(slot: number): Promise<void>;

  /** Ready, some instances restarting, or given up after a crash loop. */
  get supervision(): SupervisionStatus {
    return this.supervisor.status();
  }

  /** Per instance, whether its worker still runs (the metrics' liveness gauge). */
  get workersAlive(): boolean[] {
    return this.instances.map((i) => i.alive);
  }

  get freeInstances(): number {
    // After a crash loop every batch is answered at once (with UNAVAILABLE), so none waits forever.
    if (this.supervisor.gaveUp) return 1;
    return this.instances.filter((i) => i.alive && !this.isBusy(i)).length;
  }

  onInstanceFree(listener: () => void): void {
    this.freeListeners.push(listener);
  }

  /** An instance finished, died or came back: wakes close() once nothing runs, and the batcher. */
  protected released(): void {
    if (!this.instances.some((i) => this.isBusy(i) && i.alive)) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      waiters.forEach((w) => w());
    }
    for (const listener of this.freeListeners) listener();
  }

  /** Resolves once no live instance runs anything (close() waits for this first). */
  protected async untilIdle(): Promise<void> {
    while (this.instances.some((i) => this.isBusy(i) && i.alive)) {
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
  }

  /**
   * Starts a replacement worker and puts it in `slot` once ready (discarded if the pool is
   * closing meanwhile); `watch` attaches the pool's listeners. The supervisor retries on a throw.
   */
  protected async replaceWorker(slot: number, entry: URL, data: object, watch: (instance: I) => void): Promise<void> {
    const worker = spawnWorker(entry, data);
    try {
      await workerReady(worker);
    } catch (error) {
      await worker.terminate();
      throw error;
    }
    if (this.closing) {
      await worker.terminate();
      return;
    }
    const instance = this.instances[slot]!;
    instance.worker.removeAllListeners('message');
    instance.worker = worker;
    instance.alive = true;
    watch(instance);
    this.released();
  }
}

/** Resolves with the worker's `ready` message; rejects on its `fatal` message, an uncaught error, or an exit before it. */
export function workerReady<M extends StartupMessage>(worker: Worker): Promise<Extract<M, { type: 'ready' }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: M): void => {
      if (message.type === 'ready') {
        cleanup();
        resolve(message as Extract<M, { type: 'ready' }>);
      } else if (message.type === 'fatal') {
        cleanup();
        reject(new ConveyorError('INTERNAL', `failed to load model: ${(message as { message: string }).message}`));
      }
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(new ConveyorError('INTERNAL', `model instance failed to start: ${error.message}`));
    };
    const onExit = (code: number): void => {
      cleanup();
      reject(new ConveyorError('INTERNAL', `model instance exited (${code}) while starting`));
    };
    const cleanup = (): void => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
  });
}
