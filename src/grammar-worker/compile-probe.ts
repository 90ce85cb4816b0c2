// The compile bound (--structured-outputs-compile-timeout-secs). xgrammar's compile is one
// synchronous WASM call that cannot be interrupted, and the grammar worker that would run it
// holds every constrained request's matcher, so it must never start a compile that might not end.
// Each new grammar is first compiled on a probe thread with the same vocabulary; a probe that runs
// past the bound is terminated (losing nothing but itself: the next probe starts a fresh thread)
// and the request is refused with INVALID_ARG naming the bound; a probe that refuses a grammar is
// replaced too (xgrammar refuses by aborting its instance). Only grammars the probe compiled
// within the bound are compiled again on the grammar worker.

import type { Worker } from 'node:worker_threads';
import { invalidArg } from '../errors.js';
import { spawnWorker } from '../threads/spawn-worker.js';
import { COMPILE_PROBE_ENTRY, type CompileProbeData, type FromCompileProbe, type ToCompileProbe } from './entry.js';

/** The flag that sets the bound, as errors name it. */
export const COMPILE_TIMEOUT_FLAG = '--structured-outputs-compile-timeout-secs';

/** The 400 for a grammar past the bound (its translation, or its compile on the probe). */
export const compileBoundRefusal = (feature: string, timeoutMs: number): Error => invalidArg(`the ${feature} took longer than ${COMPILE_TIMEOUT_FLAG} (${timeoutMs / 1000} s) to compile`);

interface Probe {
  readonly worker: Worker;
  /** Settles once the probe thread has its vocabulary (the bound does not count that). */
  readonly ready: Promise<void>;
}

export class CompileProbe {
  private probe: Probe | undefined;
  private nextId = 0;
  /** Probes run one at a time: the bound is each compile's own time. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly data: CompileProbeData,
    private readonly timeoutMs: number,
  ) {}

  /** Resolves when `text` compiles within the bound; rejects with INVALID_ARG naming the bound (or xgrammar's refusal). */
  check(text: string, feature: string): Promise<void> {
    const run = this.queue.then(() => this.run(text, feature));
    this.queue = run.catch(() => {});
    return run;
  }

  async close(): Promise<void> {
    const probe = this.probe;
    this.probe = undefined;
    await probe?.worker.terminate();
  }

  private async run(text: string, feature: string): Promise<void> {
    const probe = this.start();
    await probe.ready;
    const id = this.nextId++;
    const reply = await new Promise<FromCompileProbe | 'timeout' | Error>((resolve) => {
      const timer = setTimeout(() => resolve('timeout'), this.timeoutMs);
      const done = (outcome: FromCompileProbe | Error): void => {
        clearTimeout(timer);
        probe.worker.off('message', onMessage);
        probe.worker.off('exit', onExit);
        resolve(outcome);
      };
      const onMessage = (message: FromCompileProbe): void => {
        if (message.type !== 'ready' && message.id === id) done(message);
      };
      const onExit = (code: number): void => done(new Error(`the compile probe exited with code ${code}`));
      probe.worker.on('message', onMessage);
      probe.worker.on('exit', onExit);
      probe.worker.postMessage({ type: 'compile', id, text } satisfies ToCompileProbe);
    });
    if (reply === 'timeout') {
      this.probe = undefined;
      await probe.worker.terminate();
      throw compileBoundRefusal(feature, this.timeoutMs);
    }
    if (reply instanceof Error) {
      if (this.probe === probe) this.probe = undefined;
      throw reply;
    }
    if (reply.type === 'refused') {
      // xgrammar refuses by aborting its WASM instance, which keeps what the compile had allocated:
      // the next grammar gets a fresh probe (an instance left full once refused every compile after).
      this.probe = undefined;
      await probe.worker.terminate();
      throw invalidArg(`the ${feature} cannot be compiled: ${reply.message}`);
    }
  }

  private start(): Probe {
    if (this.probe) return this.probe;
    const worker = spawnWorker(COMPILE_PROBE_ENTRY, this.data);
    // An idle probe must not keep the grammar worker alive.
    worker.unref();
    const ready = new Promise<void>((resolve, reject) => {
      const onMessage = (message: FromCompileProbe): void => {
        if (message.type !== 'ready') return;
        worker.off('message', onMessage);
        resolve();
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the compile probe exited with code ${code} before it was ready`)));
    });
    ready.catch(() => {});
    worker.on('exit', () => {
      if (this.probe?.worker === worker) this.probe = undefined;
    });
    this.probe = { worker, ready };
    return this.probe;
  }
}
