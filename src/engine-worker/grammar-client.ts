// The engine's side of the grammar worker (src/grammar-worker): started on the first constrained
// request (an engine that never sees one never builds the tokenizer info), each job a promise
// settled by the worker's reply. A worker that dies fails every job it held and tells the owner,
// whose matchers died with it; the next job starts a fresh worker.

import type { Worker } from 'node:worker_threads';
import type { GrammarSpec } from '../contracts/generate.js';
import { ConveyorError } from '../errors.js';
import { GRAMMAR_WORKER_ENTRY, type FromGrammarWorker, type GrammarWorkerData, type MaskJob, type MaskResult, type ToGrammarWorker, type TryJob, type TryResult } from '../grammar-worker/entry.js';
import { spawnWorker } from '../threads/spawn-worker.js';

export interface MaskBatch {
  readonly masks: readonly MaskResult[];
  /** Time the worker spent on the batch, ms. */
  readonly ms: number;
}

interface Pending {
  readonly resolve: (reply: FromGrammarWorker) => void;
  readonly reject: (error: Error) => void;
}

export class GrammarWorkerClient {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly data: GrammarWorkerData,
    /** Called when a worker that held matchers is lost: every matcher is gone. */
    private readonly onLost: (reason: string) => void,
  ) {}

  /** Resolves once the request's matcher exists; rejects with the worker's error (INVALID_ARG for a refused spec). */
  async open(requestId: string, spec: GrammarSpec, stopTokenIds: readonly number[]): Promise<void> {
    await this.job((id) => ({ type: 'open', id, requestId, spec, stopTokenIds }));
  }

  /** Catches each row's matcher up and returns its next-token mask. */
  async masks(rows: readonly MaskJob[]): Promise<MaskBatch> {
    const reply = await this.job((id) => ({ type: 'masks', id, rows }));
    if (reply.type !== 'masks') throw new ConveyorError('INTERNAL', `the grammar worker answered a masks job with ${reply.type}`);
    return { masks: reply.masks, ms: reply.ms };
  }

  /** Catches each row's matcher up and tries its greedy candidates in order; a row that takes none comes back with its mask. */
  async tryCandidates(rows: readonly TryJob[]): Promise<{ readonly results: readonly TryResult[]; readonly ms: number }> {
    const reply = await this.job((id) => ({ type: 'try', id, rows }));
    if (reply.type !== 'tried') throw new ConveyorError('INTERNAL', `the grammar worker answered a try job with ${reply.type}`);
    return { results: reply.results, ms: reply.ms };
  }

  release(requestId: string): void {
    this.worker?.postMessage({ type: 'release', requestId } satisfies ToGrammarWorker);
  }

  /** Stops the worker; jobs still waiting fail. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new ConveyorError('UNAVAILABLE', 'the grammar worker closed'));
    await worker?.terminate();
  }

  /** The running worker, for fault-injection tests (terminating it is a worker crash). */
  get thread(): Worker | undefined {
    return this.worker;
  }

  private job(message: (id: number) => ToGrammarWorker): Promise<FromGrammarWorker> {
    const id = this.nextId++;
    return new Promise<FromGrammarWorker>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const worker = this.start();
      worker.ref();
      worker.postMessage(message(id));
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = spawnWorker(GRAMMAR_WORKER_ENTRY, this.data);
    // An idle grammar worker must not keep the engine thread alive; while jobs wait it is ref'd.
    worker.unref();
    worker.on('message', (reply: FromGrammarWorker) => this.settle(reply));
    worker.on('error', (error) => this.lost(worker, error.message));
    worker.on('exit', (code) => this.lost(worker, `exited with code ${code}`));
    this.worker = worker;
    return worker;
  }

  private settle(reply: FromGrammarWorker): void {
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.worker?.unref();
    if (reply.type === 'failed') pending.reject(new ConveyorError(reply.code, reply.message));
    else pending.resolve(reply);
  }

  private lost(worker: Worker, why: string): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    const reason = `the grammar worker stopped (${why})`;
    this.failAll(new ConveyorError('INTERNAL', reason));
    this.onLost(reason);
  }

  private failAll(error: Error): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(error);
  }
}
