// The main-thread facade of one LLM engine: submit(request) → async iterable of the request's
// updates, abort(id). It spawns the engine worker and fans each step message out to requests.
// The worker is supervised: if it dies, the requests it held fail with UNAVAILABLE, new ones are
// refused until a fresh engine (new KV cache) is up, and a crash loop stops the restarts.

import { mainThreadTurns } from '../threads/event-loop-turns.js';
import type { Worker } from 'node:worker_threads';
import type { EngineReadyInfo, EngineWorkerData, FromEngine, ToEngine } from '../contracts/engine-messages.js';
import type { EngineStats, GenerateRequest, SequenceUpdate, StepOutput } from '../contracts/generate.js';
import { ConveyorError, unavailable, type ErrorCode } from '../errors.js';
import type { RestartPolicy } from '../threads/restart-policy.js';
import { ENGINE_WORKER_ENTRY } from '../engine-worker/entry.js';
import { spawnWorker } from '../threads/spawn-worker.js';
import { WorkerSupervisor, type SupervisionStatus } from '../threads/worker-supervisor.js';

/** What a request's stream yields: its updates, each stamped with the step's engine time. */
export interface EngineUpdate {
  readonly update: SequenceUpdate;
  /** When the step's tokens were applied (ms since the epoch). */
  readonly timeMs: number;
}

export interface EngineSupervision {
  /** Names the engine in logs and errors ("model:version"). */
  readonly label?: string;
  readonly policy?: RestartPolicy;
}

interface Channel {
  readonly queue: EngineUpdate[];
  error?: ConveyorError;
  done: boolean;
  notify?: () => void;
}

/** Spawns an engine worker and waits for its ready message (rejects on a fatal one). */
async function spawnEngine(config: EngineWorkerData, log: (line: string) => void): Promise<{ worker: Worker; info: EngineReadyInfo }> {
  const worker = spawnWorker(ENGINE_WORKER_ENTRY, config);
  const info = await new Promise<EngineReadyInfo>((resolve, reject) => {
    worker.on('message', (message: FromEngine) => {
      if (message.type === 'log') log(message.line);
      if (message.type === 'ready') resolve(message.info);
      if (message.type === 'fatal') reject(new ConveyorError('INTERNAL', `failed to start the engine: ${message.message}`));
    });
    worker.once('error', (error) => reject(new ConveyorError('INTERNAL', `engine worker failed to start: ${error.message}`)));
    worker.once('exit', (code) => reject(new ConveyorError('INTERNAL', `engine worker exited (${code}) while starting`)));
  }).catch(async (error: unknown) => {
    await worker.terminate();
    throw error;
  });
  // Only these: Worker keeps internal newListener/removeListener hooks that must stay.
  for (const event of ['message', 'error', 'exit']) worker.removeAllListeners(event);
  return { worker, info };
}

export class EngineClient {
  private readonly channels = new Map<string, Channel>();
  private readonly stepListeners: ((output: StepOutput) => void)[] = [];
  private readonly supervisor: WorkerSupervisor;
  private readonly label: string;
  private latestStats: EngineStats | undefined;
  /** The running worker; undefined while it is being restarted (or after close). */
  private worker: Worker | undefined;
  private closing = false;

  private constructor(
    worker: Worker,
    private currentInfo: EngineReadyInfo,
    private readonly config: EngineWorkerData,
    private readonly log: (line: string) => void,
    supervision: EngineSupervision,
  ) {
    this.label = supervision.label ?? 'engine';
    this.supervisor = new WorkerSupervisor({
      label: 'engine',
      numWorkers: 1,
      log,
      respawn: () => this.respawn(),
      ...(supervision.policy ? { policy: supervision.policy } : {}),
    });
    this.attach(worker);
  }

  static async start(config: EngineWorkerData, log: (line: string) => void, supervision: EngineSupervision = {}): Promise<EngineClient> {
    const { worker, info } = await spawnEngine(config, log);
    if (info.note) log(info.note);
    return new EngineClient(worker, info, config, log, supervision);
  }

  /** The engine's shape (layers, KV blocks, device) as its latest worker reported it. */
  get info(): EngineReadyInfo {
    return this.currentInfo;
  }

  /** Ready, restarting after a crash, or given up after a crash loop. */
  get supervision(): SupervisionStatus {
    return this.supervisor.status();
  }

  /** The engine's counters as of the latest step message. */
  get stats(): EngineStats | undefined {
    return this.latestStats;
  }

  /** False while no worker runs (closed, crashed, restarting). */
  get alive(): boolean {
    return this.worker !== undefined;
  }

  /** Called with every step message, before its updates reach the request streams (metrics); the returned function stops the calls. */
  onStep(listener: (output: StepOutput) => void): () => void {
    this.stepListeners.push(listener);
    return () => {
      const at = this.stepListeners.indexOf(listener);
      if (at >= 0) this.stepListeners.splice(at, 1);
    };
  }

  get numActive(): number {
    return this.channels.size;
  }

  /** Queues a request on the engine; iterate the result for its updates (ends after the final one). */
  submit(request: GenerateRequest): AsyncIterable<EngineUpdate> {
    if (!this.worker) throw unavailable(this.notRunningReason());
    if (this.channels.has(request.id)) throw new ConveyorError('ALREADY_EXISTS', `request id '${request.id}' is already running`);
    const channel: Channel = { queue: [], done: false };
    this.channels.set(request.id, channel);
    this.post({ type: 'add', request });
    return this.iterate(request.id, channel);
  }

  /** Ends a request: its blocks are freed at the next step boundary; the stream ends with reason `reason`. */
  abort(requestId: string, reason: 'abort' | 'stop' = 'abort'): void {
    if (this.channels.has(requestId)) this.post({ type: 'abort', requestId, reason });
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.supervisor.stop();
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    const closed = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ type: 'close' } satisfies ToEngine);
    await Promise.race([closed, new Promise((r) => setTimeout(r, 5000).unref())]);
    await worker.terminate();
  }

  /** Posts to the running worker; dropped while none runs (its requests have already failed). */
  private post(message: ToEngine): void {
    this.worker?.postMessage(message);
  }

  private notRunningReason(): string {
    if (this.closing) return 'the engine is not running';
    return `the engine of model ${this.label} is not running (${this.supervisor.status().reason || 'restarting'}); retry later`;
  }

  private attach(worker: Worker): void {
    this.worker = worker;
    worker.on('message', (message: FromEngine) => {
      if (message.type === 'fatal') {
        this.crashed(worker, message.message);
        void worker.terminate();
      } else {
        this.onMessage(message);
      }
    });
    worker.on('error', (error) => this.crashed(worker, `uncaught error: ${error.message}`));
    worker.on('exit', (code) => this.crashed(worker, `worker exited with code ${code}`));
  }

  /** A fresh engine (new KV cache) in place of the dead one; the supervisor calls it after the backoff. */
  private async respawn(): Promise<void> {
    const { worker, info } = await spawnEngine(this.config, this.log);
    if (this.closing) {
      await worker.terminate();
      return;
    }
    this.currentInfo = info;
    this.attach(worker);
  }

  private async *iterate(requestId: string, channel: Channel): AsyncGenerator<EngineUpdate> {
    try {
      while (true) {
        while (channel.queue.length > 0) {
          const next = channel.queue.shift()!;
          yield next;
          if (next.update.finishReason !== null) return;
        }
        if (channel.error) throw channel.error;
        if (channel.done) return;
        await new Promise<void>((resolve) => (channel.notify = resolve));
        channel.notify = undefined;
      }
    } finally {
      // A consumer that stops early (client went away) aborts the request.
      if (this.channels.get(requestId) === channel) {
        const finished = channel.done || channel.error;
        this.channels.delete(requestId);
        if (!finished) this.post({ type: 'abort', requestId, reason: 'abort' });
      }
    }
  }

  private onMessage(message: FromEngine): void {
    if (message.type === 'log') return this.log(message.line);
    if (message.type !== 'step') return;
    const { output } = message;
    this.latestStats = output.stats;
    for (const listener of this.stepListeners) listener(output);
    for (const update of output.updates) {
      const channel = this.channels.get(update.requestId);
      if (!channel) continue;
      channel.queue.push({ update, timeMs: output.timeMs });
      if (update.finishReason !== null) channel.done = true;
      // Each stream's consumer (detokenize, stop strings, framing, the socket write) wakes in a
      // turn of its own, so a step of 32 streams does not hold the event loop for all 32.
      mainThreadTurns.run(() => channel.notify?.());
    }
    for (const rejection of output.rejections) {
      const channel = this.channels.get(rejection.requestId);
      if (!channel) continue;
      channel.error = new ConveyorError(rejection.code as ErrorCode, rejection.message);
      channel.notify?.();
    }
  }

  /** The first report of `worker`'s death (fatal message, error or exit) fails what it held. */
  private crashed(worker: Worker, cause: string): void {
    if (worker !== this.worker || this.closing) return;
    this.worker = undefined;
    this.latestStats = undefined;
    worker.removeAllListeners('message');
    this.log(`engine worker crashed: ${cause}`);
    const error = unavailable(`the engine of model ${this.label} crashed (${cause}); the request was not completed; the engine is restarting, retry later`);
    for (const channel of this.channels.values()) {
      if (!channel.done) channel.error = error;
      channel.notify?.();
    }
    this.channels.clear();
    this.supervisor.crashed(0, cause);
  }
}
