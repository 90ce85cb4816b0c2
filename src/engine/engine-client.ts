// The main-thread facade of one LLM engine: submit(request) → async iterable of the request's
// updates, abort(id). It spawns the engine worker and fans each step message out to requests.

import type { Worker } from 'node:worker_threads';
import type { EngineReadyInfo, EngineWorkerData, FromEngine, ToEngine } from '../contracts/engine-messages.js';
import type { EngineStats, GenerateRequest, SequenceUpdate, StepOutput } from '../contracts/generate.js';
import { ConveyorError, unavailable, type ErrorCode } from '../errors.js';
import { spawnWorker } from '../runtime/spawn-worker.js';

const ENGINE_WORKER = new URL('./engine-worker.ts', import.meta.url);

/** What a request's stream yields: its updates, each stamped with the step's engine time. */
export interface EngineUpdate {
  readonly update: SequenceUpdate;
  /** When the step's tokens were applied (ms since the epoch). */
  readonly timeMs: number;
}

interface Channel {
  readonly queue: EngineUpdate[];
  error?: ConveyorError;
  done: boolean;
  notify?: () => void;
}

export class EngineClient {
  private readonly channels = new Map<string, Channel>();
  private readonly stepListeners: ((output: StepOutput) => void)[] = [];
  private latestStats: EngineStats | undefined;
  private running = true;

  private constructor(
    private readonly worker: Worker,
    readonly info: EngineReadyInfo,
    private readonly log: (line: string) => void,
  ) {
    worker.on('message', (message: FromEngine) => this.onMessage(message));
    worker.on('error', (error) => this.fail(`engine worker failed: ${error.message}`));
    worker.on('exit', (code) => this.fail(`engine worker exited (${code})`));
  }

  static async start(config: EngineWorkerData, log: (line: string) => void): Promise<EngineClient> {
    const worker = spawnWorker(ENGINE_WORKER, config);
    const info = await new Promise<EngineReadyInfo>((resolve, reject) => {
      const onMessage = (message: FromEngine): void => {
        if (message.type === 'log') log(message.line);
        if (message.type === 'ready') resolve(message.info);
        if (message.type === 'fatal') reject(new ConveyorError('INTERNAL', `failed to start the engine: ${message.message}`));
      };
      worker.on('message', onMessage);
      worker.once('error', (error) => reject(new ConveyorError('INTERNAL', `engine worker failed to start: ${error.message}`)));
    }).catch(async (error: unknown) => {
      await worker.terminate();
      throw error;
    });
    worker.removeAllListeners('message');
    worker.removeAllListeners('error');
    if (info.note) log(info.note);
    return new EngineClient(worker, info, log);
  }

  /** The engine's counters as of the latest step message. */
  get stats(): EngineStats | undefined {
    return this.latestStats;
  }

  /** False once the worker stopped (closed or crashed). */
  get alive(): boolean {
    return this.running;
  }

  /** Called with every step message, before its updates reach the request streams (metrics). */
  onStep(listener: (output: StepOutput) => void): void {
    this.stepListeners.push(listener);
  }

  get numActive(): number {
    return this.channels.size;
  }

  /** Queues a request on the engine; iterate the result for its updates (ends after the final one). */
  submit(request: GenerateRequest): AsyncIterable<EngineUpdate> {
    if (!this.running) throw unavailable('the engine is not running');
    if (this.channels.has(request.id)) throw new ConveyorError('ALREADY_EXISTS', `request id '${request.id}' is already running`);
    const channel: Channel = { queue: [], done: false };
    this.channels.set(request.id, channel);
    this.post({ type: 'add', request });
    return this.iterate(request.id, channel);
  }

  /** Ends a request: its blocks are freed at the next step boundary; the stream ends with reason `reason`. */
  abort(requestId: string, reason: 'abort' | 'stop' = 'abort'): void {
    if (this.channels.has(requestId) && this.running) this.post({ type: 'abort', requestId, reason });
  }

  async close(): Promise<void> {
    if (!this.running) return;
    const closed = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.post({ type: 'close' });
    this.running = false;
    await Promise.race([closed, new Promise((r) => setTimeout(r, 5000).unref())]);
    await this.worker.terminate();
  }

  private post(message: ToEngine): void {
    this.worker.postMessage(message);
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
        if (!finished && this.running) this.post({ type: 'abort', requestId, reason: 'abort' });
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
      channel.notify?.();
    }
    for (const rejection of output.rejections) {
      const channel = this.channels.get(rejection.requestId);
      if (!channel) continue;
      channel.error = new ConveyorError(rejection.code as ErrorCode, rejection.message);
      channel.notify?.();
    }
  }

  private fail(reason: string): void {
    if (!this.running) return;
    this.running = false;
    this.log(reason);
    for (const channel of this.channels.values()) {
      channel.error = new ConveyorError('INTERNAL', reason);
      channel.notify?.();
    }
  }
}
