// The engine worker thread: owns the EngineCore (scheduler, KV cache, session, sampler) and runs
// steps back to back while there is work. Between steps it yields to the event loop, so adds and
// aborts that arrived during a forward pass take effect at the next step.

import { parentPort, workerData } from 'node:worker_threads';
import type { EngineWorkerData, FromEngine, ToEngine } from '../contracts/engine-messages.js';
import { EngineCore } from './engine-core.js';

const port = parentPort!;
const config = workerData as EngineWorkerData;
const post = (message: FromEngine): void => port.postMessage(message);
const yieldToMessages = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function main(): Promise<void> {
  let core: EngineCore;
  try {
    core = await EngineCore.create(config, (line) => post({ type: 'log', line }));
  } catch (error) {
    post({ type: 'fatal', message: error instanceof Error ? error.message : String(error) });
    return;
  }
  const { layout, numBlocks, device, note } = core.info;
  post({ type: 'ready', info: { ...layout, numBlocks, blockSize: config.blockSize, device, ...(note ? { note } : {}) } });

  let closing = false;
  let wake: (() => void) | undefined;
  port.on('message', (message: ToEngine) => {
    if (message.type === 'add') core.add(message.request);
    else if (message.type === 'abort') core.abort(message.requestId, message.reason);
    else closing = true;
    wake?.();
  });

  while (!closing) {
    if (core.hasWork()) {
      post({ type: 'step', output: await core.step() });
      await yieldToMessages();
    } else if (core.hasNews()) {
      post({ type: 'step', output: core.flush() });
    } else {
      // Idle: a good moment to prove the block accounting is still exact.
      core.checkIntegrity();
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  }
  await core.release();
  post({ type: 'closed' });
  port.close();
}

void main();
