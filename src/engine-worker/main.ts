// The engine worker thread: owns the EngineCore (scheduler, KV cache, runner, sampler) and runs
// steps back to back while there is work. Between steps it yields to the event loop, so adds and
// aborts that arrived during a forward pass take effect at the next step. Anything the loop
// throws is reported as `fatal` and ends the thread with a non-zero code: the main thread's
// supervisor then fails the requests in flight and starts a fresh engine.

import { parentPort, workerData } from 'node:worker_threads';
import type { EngineWorkerData, FromEngine, ToEngine } from '../contracts/engine-messages.js';
import { KvEventPublisher } from '../kv-events/publisher.js';
import { openModelRunner, withFaultInjection } from '../runners/create-runner.js';
import { lowerThisThreadPriority } from '../threads/thread-priority.js';
import { openDraftRunner } from './draft-model.js';
import { EngineCore } from './engine-core.js';

const port = parentPort!;
const config = workerData as EngineWorkerData;
const post = (message: FromEngine): void => port.postMessage(message);
const yieldToMessages = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

async function main(): Promise<void> {
  let core: EngineCore;
  let events: KvEventPublisher | undefined;
  try {
    const log = (line: string): void => post({ type: 'log', line });
    // Before the runner opens its session, so ORT's threads inherit the priority.
    const priority = lowerThisThreadPriority(config.threadNice ?? 0);
    if (priority) log(priority);
    const runner = await openModelRunner(config);
    const draft = await openDraftRunner(config, runner.info);
    // TEST-ONLY: a draft_pass fault fails the draft model's Nth pass (src/threads/fault-injection.ts).
    const fault = config.faultInjection;
    core = EngineCore.create(config, runner, log, draft && fault?.at === 'draft_pass' ? withFaultInjection(draft, fault) : draft);
    if (config.kvEvents) events = await KvEventPublisher.open(config.kvEvents, log);
  } catch (error) {
    post({ type: 'fatal', message: describe(error) });
    return;
  }
  const { kind, shape, numBlocks, blockSize, device, note } = core.info;
  post({ type: 'ready', info: { runnerKind: kind, ...shape, numBlocks, blockSize, device, ...(note ? { note } : {}) } });

  let closing = false;
  let wake: (() => void) | undefined;
  let failed: unknown;
  port.on('message', (message: ToEngine) => {
    try {
      if (message.type === 'add') core.add(message.request);
      else if (message.type === 'abort') core.abort(message.requestId, message.reason);
      else closing = true;
    } catch (error) {
      // Not thrown into the event loop: the loop below reports it like its own failures.
      failed ??= error;
    }
    wake?.();
  });
  // The pool's events of each step go out as one batch (the first holds AllBlocksCleared).
  const publishKvEvents = events ? (): void => events.publish(core.takeKvEvents()) : (): void => {};
  publishKvEvents();
  await runSteps(
    core,
    () => closing || failed !== undefined,
    (resolve) => (wake = resolve),
    publishKvEvents,
  );
  if (failed !== undefined) throw failed;
  await events?.close();
  await core.release();
  post({ type: 'closed' });
  port.close();
}

/** Steps while there is work, flushes news, checks integrity and sleeps when idle, until `stop()`. */
async function runSteps(core: EngineCore, stop: () => boolean, sleep: (wake: () => void) => void, afterStep: () => void): Promise<void> {
  while (!stop()) {
    if (core.hasWork()) {
      post({ type: 'step', output: await core.step() });
      afterStep();
      await yieldToMessages();
    } else if (core.hasNews()) {
      post({ type: 'step', output: core.flush() });
    } else {
      // Idle: a good moment to prove the block accounting is still exact.
      core.checkIntegrity();
      await new Promise<void>(sleep);
    }
  }
}

main().catch((error: unknown) => {
  post({ type: 'fatal', message: `engine failed: ${describe(error)}` });
  // Non-zero: the main thread tells this from a requested close by the code as well.
  process.exit(1);
});
