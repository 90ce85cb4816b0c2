// Large request bodies parsed off the serving thread: a front end hands a body past
// `minBytes` (--offthread-json-bytes) to a parse worker (src/parse-worker), naming its own job
// module, and awaits the decoded value; smaller ones it parses in place as before. JSON.parse of
// 20 MB and the walk that turns its numbers into a typed array take seconds of CPU, during
// which every socket, health check and timer of the server would wait.
//
// A small pool (two workers at most), started on first use and unref'd while idle, so it neither
// costs a thread nor holds the process when nothing large arrives. A job goes to the worker with
// the fewest jobs; a worker that dies fails only its own jobs, and the next job starts a fresh one.

import type { Worker } from 'node:worker_threads';
import { ConveyorError } from '../../errors.js';
import { FaultPoint, parseWorkerFaultOf } from '../../threads/fault-injection.js';
import { runnableEntry, spawnWorker } from '../../threads/spawn-worker.js';
import { PARSE_WORKER_ENTRY, type ParseJob, type ParseResult, type ParseWorkerData } from '../../parse-worker/entry.js';

export type { OffThreadAnswer, WireError } from '../../parse-worker/entry.js';

export interface OffThreadParseOptions {
  /** Bodies (and WebSocket frames) of at least this many bytes are parsed in a worker; 0 = never. */
  readonly minBytes: number;
  /** Nice steps below the server's priority for the workers (--compute-thread-nice). */
  readonly threadNice: number;
  /** Workers at most (default 2). */
  readonly maxWorkers?: number;
  /** Where the pool's warnings go (a test-only fault injection honoured or ignored); default: a process warning. */
  readonly warn?: (line: string) => void;
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

interface Slot {
  readonly worker: Worker;
  readonly jobs: Map<number, Pending>;
}

export class OffThreadParser {
  private readonly slots: Slot[] = [];
  private nextId = 0;
  private closed = false;
  /** TEST-ONLY: CONVEYOR_PARSE_WORKER_FAULT's job, when the environment asks for one (src/threads/fault-injection.ts). */
  private readonly fault: FaultPoint;

  constructor(readonly options: OffThreadParseOptions) {
    this.fault = new FaultPoint(parseWorkerFaultOf(options.warn ?? ((line) => process.emitWarning(line))));
  }

  /** True when a body of `bytes` bytes is to be parsed in a worker. */
  wants(bytes: number): boolean {
    return this.options.minBytes > 0 && bytes >= this.options.minBytes && !this.closed;
  }

  /**
   * Runs `module`'s `parseOffThread(input)` on a worker. `transfer` lists buffers of `input` to
   * move there (the caller must not use them afterwards). Rejects with the ConveyorError the job
   * threw, rebuilt with its code, message and param.
   */
  run<T>(module: URL, input: unknown, transfer: readonly ArrayBuffer[] = []): Promise<T> {
    if (this.closed) return Promise.reject(new ConveyorError('UNAVAILABLE', 'the server is shutting down'));
    const slot = this.slot();
    const id = this.nextId++;
    const fault = this.fault.due();
    const job: ParseJob = { id, module: runnableEntry(module).href, input, ...(fault ? { fault } : {}) };
    return new Promise<T>((resolve, reject) => {
      slot.jobs.set(id, { resolve: resolve as (value: unknown) => void, reject });
      slot.worker.ref();
      slot.worker.postMessage(job, [...transfer]);
    });
  }

  /** Stops the workers; jobs in flight fail. */
  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    for (const slot of slots) this.failAll(slot, new ConveyorError('UNAVAILABLE', 'the server is shutting down'));
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  private slot(): Slot {
    const idle = this.slots.find((s) => s.jobs.size === 0);
    if (idle) return idle;
    if (this.slots.length < (this.options.maxWorkers ?? 2)) return this.start();
    return this.slots.reduce((a, b) => (b.jobs.size < a.jobs.size ? b : a));
  }

  private start(): Slot {
    const data: ParseWorkerData = { threadNice: this.options.threadNice };
    const worker = spawnWorker(PARSE_WORKER_ENTRY, data);
    const slot: Slot = { worker, jobs: new Map() };
    // An idle worker must not keep the process alive; while jobs wait it is ref'd.
    worker.unref();
    worker.on('message', (result: ParseResult) => this.settle(slot, result));
    worker.on('error', (error) => this.lost(slot, error));
    worker.on('exit', (code) => this.lost(slot, new Error(`the parse worker exited (code ${code})`)));
    this.slots.push(slot);
    return slot;
  }

  private settle(slot: Slot, result: ParseResult): void {
    const pending = slot.jobs.get(result.id);
    if (!pending) return;
    slot.jobs.delete(result.id);
    if (slot.jobs.size === 0) slot.worker.unref();
    if ('error' in result) pending.reject(new ConveyorError(result.error.code, result.error.message, result.error.param));
    else pending.resolve(result.value);
  }

  private lost(slot: Slot, error: Error): void {
    const at = this.slots.indexOf(slot);
    if (at < 0) return;
    this.slots.splice(at, 1);
    this.failAll(slot, new ConveyorError('INTERNAL', `parsing the request failed: ${error.message}`));
  }

  private failAll(slot: Slot, error: Error): void {
    const pending = [...slot.jobs.values()];
    slot.jobs.clear();
    for (const p of pending) p.reject(error);
  }
}

/**
 * Bytes ready to move to a worker: a buffer of their own is transferred (the caller must not use
 * it afterwards); a view into a larger one is copied out first, since a transfer or a clone would
 * carry the whole underlying buffer.
 */
export function movable(bytes: Uint8Array): { readonly bytes: Uint8Array; readonly transfer: ArrayBuffer[] } {
  const own = bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
  return { bytes: own, transfer: [own.buffer as ArrayBuffer] };
}
