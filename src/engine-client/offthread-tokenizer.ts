// Tokenization that never stalls the event loop: texts up to OFFTHREAD_MIN_CHARS are encoded
// in place (a few milliseconds at most), longer ones in a tokenizer worker started on first use
// and shared by every request to the model. The worker builds its own tokenizer from the same
// files, so both paths give the same ids.

import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../threads/spawn-worker.js';
import type { TextTokenizer } from '../contracts/tokenizer.js';
import { OFFTHREAD_MIN_CHARS } from '../config/limits.js';
import type { ModelFiles } from '../tokenizer/model-files.js';
import { TOKENIZER_WORKER_ENTRY, type TokenizeJob, type TokenizeResult, type TokenizerWorkerData } from '../tokenizer-worker/entry.js';

interface Pending {
  readonly resolve: (ids: number[]) => void;
  readonly reject: (error: Error) => void;
}

export class OffThreadTokenizer {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly files: Pick<ModelFiles, 'tokenizerJson' | 'tokenizerConfig'>,
    private readonly minChars = OFFTHREAD_MIN_CHARS,
  ) {}

  /** The ids `tokenizer.encode(text, { add_special_tokens })` gives, computed off the main thread when the text is long. */
  encode(text: string, addSpecialTokens: boolean): Promise<number[]> {
    if (text.length < this.minChars) return Promise.resolve(this.tokenizer.encode(text, { add_special_tokens: addSpecialTokens }).ids);
    const id = this.nextId++;
    const job: TokenizeJob = { id, text, addSpecialTokens };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const worker = this.start();
      worker.ref();
      worker.postMessage(job);
    });
  }

  /** Stops the worker; jobs still queued fail. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error('the tokenizer closed'));
    await worker?.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const data: TokenizerWorkerData = { files: this.files };
    const worker = spawnWorker(TOKENIZER_WORKER_ENTRY, data);
    // An idle tokenizer must not keep the process alive; while jobs wait it is ref'd.
    worker.unref();
    worker.on('message', (result: TokenizeResult) => this.settle(result));
    worker.on('error', (error) => this.lost(worker, error));
    worker.on('exit', (code) => this.lost(worker, new Error(`the tokenizer worker exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  private settle(result: TokenizeResult): void {
    const pending = this.pending.get(result.id);
    if (!pending) return;
    this.pending.delete(result.id);
    if (this.pending.size === 0) this.worker?.unref();
    if ('error' in result) pending.reject(new Error(result.error));
    else pending.resolve(result.ids);
  }

  // A worker that died fails its jobs; the next long text starts a fresh one.
  private lost(worker: Worker, error: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.failAll(error);
  }

  private failAll(error: Error): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(error);
  }
}
