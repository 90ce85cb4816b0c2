// The main-thread side of bench-worker.ts: ask for floor calls, the step profile or a sweep
// workload, get the worker's own timings back.

import type { Worker } from 'node:worker_threads';
import type { EngineWorkerData } from '../../../src/contracts/engine-messages.js';
import { spawnWorker } from '../../../src/threads/spawn-worker.js';
import type { StepShape } from '../forward/feeds.js';
import type { EngineBenchConfig } from './config.js';
import type { StepProfile } from './profile.js';
import type { ForwardFloor, WorkloadProfile } from './workload-profile.js';

const ENTRY = new URL('./bench-worker.ts', import.meta.url);

export interface BenchWorkerData {
  readonly modelPath: string;
  readonly threads: number;
  /** Seed of the floor's random inputs. */
  readonly seed: number;
}

/** One forward shape of the floor, named by its case point (e.g. 'decode b8'). */
export interface FloorShape extends StepShape {
  readonly point: string;
}

export type ToBenchWorker =
  | { readonly type: 'prepare-floor'; readonly id: number; readonly shapes: readonly FloorShape[] }
  | { readonly type: 'floor'; readonly id: number; readonly point: string; readonly calls: number }
  | { readonly type: 'profile'; readonly id: number; readonly config: EngineBenchConfig; readonly engine: EngineWorkerData }
  | { readonly type: 'workload'; readonly id: number; readonly engine: EngineWorkerData; readonly concurrency: number; readonly promptTokens: number; readonly outputTokens: number }
  | { readonly type: 'forward-floor'; readonly id: number; readonly config: EngineBenchConfig; readonly modelPath: string; readonly concurrency: number; readonly promptTokens: number }
  | { readonly type: 'close' };

export type FromBenchWorker =
  | { readonly type: 'done'; readonly id: number }
  | { readonly type: 'floor'; readonly id: number; readonly times: number[] }
  | { readonly type: 'profile'; readonly id: number; readonly profile: StepProfile[] }
  | { readonly type: 'workload'; readonly id: number; readonly workload: WorkloadProfile }
  | { readonly type: 'forward-floor'; readonly id: number; readonly floor: ForwardFloor }
  | { readonly type: 'error'; readonly id: number; readonly message: string };

type Pending = { resolve: (message: FromBenchWorker) => void; reject: (error: Error) => void };

export class BenchWorker {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (message: FromBenchWorker) => {
      const waiting = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.type === 'error') waiting?.reject(new Error(`bench worker: ${message.message}`));
      else waiting?.resolve(message);
    });
    const failAll = (error: Error) => {
      for (const p of this.pending.values()) p.reject(error);
      this.pending.clear();
    };
    worker.on('error', failAll);
    worker.on('exit', (code) => failAll(new Error(`bench worker exited (${code})`)));
  }

  static start(data: BenchWorkerData): BenchWorker {
    return new BenchWorker(spawnWorker(ENTRY, data));
  }

  async prepareFloor(shapes: readonly FloorShape[]): Promise<void> {
    await this.request({ type: 'prepare-floor', id: this.nextId++, shapes });
  }

  async floor(point: string, calls: number): Promise<number[]> {
    const reply = await this.request({ type: 'floor', id: this.nextId++, point, calls });
    return reply.type === 'floor' ? reply.times : [];
  }

  /** The decode step profile. */
  async profile(config: EngineBenchConfig, engine: EngineWorkerData): Promise<StepProfile[]> {
    const reply = await this.request({ type: 'profile', id: this.nextId++, config, engine });
    return reply.type === 'profile' ? reply.profile : [];
  }

  /** One whole throughput workload on a fresh EngineCore in the worker, by runner phase. */
  async workload(engine: EngineWorkerData, concurrency: number, promptTokens: number, outputTokens: number): Promise<WorkloadProfile> {
    const reply = await this.request({ type: 'workload', id: this.nextId++, engine, concurrency, promptTokens, outputTokens });
    if (reply.type !== 'workload') throw new Error(`bench worker answered ${reply.type} to a workload`);
    return reply.workload;
  }

  /** The bare Optimum forward pass (of `modelPath`, the variant being compared) of one sweep point's work. */
  async forwardFloor(config: EngineBenchConfig, modelPath: string, concurrency: number, promptTokens: number): Promise<ForwardFloor> {
    const reply = await this.request({ type: 'forward-floor', id: this.nextId++, config, modelPath, concurrency, promptTokens });
    if (reply.type !== 'forward-floor') throw new Error(`bench worker answered ${reply.type} to a forward floor`);
    return reply.floor;
  }

  async close(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage({ type: 'close' } satisfies ToBenchWorker);
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000).unref())]);
    await this.worker.terminate();
  }

  private request(message: Exclude<ToBenchWorker, { type: 'close' }>): Promise<FromBenchWorker> {
    return new Promise((resolve, reject) => {
      this.pending.set(message.id, { resolve, reject });
      this.worker.postMessage(message);
    });
  }
}
