// A model instance: one worker thread owning one onnxruntime-node session. session.run blocks
// the thread it runs on, which is why it runs here and never on the main thread. A failed
// session.run answers its one execution with `error`; anything else that throws is reported as
// `fatal` and ends the thread non-zero, and the pool's supervisor starts a fresh instance.

import { parentPort, workerData } from 'node:worker_threads';
import { transferList, type Tensor } from '../contracts/tensors.js';
import type { FromInstanceWorker, InstanceWorkerData, ToInstanceWorker } from '../contracts/worker-messages.js';
import { FaultPoint } from '../threads/fault-injection.js';
import { fromOrt, toOrt } from '../runtime/ort-tensors.js';
import { lowerThisThreadPriority } from '../threads/thread-priority.js';
import { describeSession, openSession, type OpenedSession } from '../runtime/session-factory.js';

const port = parentPort!;
const config = workerData as InstanceWorkerData;
const post = (message: FromInstanceWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer);
type RunMessage = Extract<ToInstanceWorker, { type: 'run' }>;
const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

function die(error: unknown): never {
  post({ type: 'fatal', message: `instance failed: ${describe(error)}` });
  process.exit(1);
}

async function main(): Promise<void> {
  let opened;
  try {
    // Before the session opens, so ORT's threads inherit the priority (the pool logs the session's note only).
    lowerThisThreadPriority(config.threadNice ?? 0);
    opened = await openSession(config);
  } catch (error) {
    post({ type: 'fatal', message: describe(error) });
    return;
  }
  const { session } = opened;
  const fault = new FaultPoint(config.faultInjection);
  post({ type: 'ready', metadata: describeSession(session, config.modelPath), device: opened.device, ...(opened.note ? { note: opened.note } : {}) });

  port.on('message', (message: ToInstanceWorker) => {
    if (message.type === 'close') {
      session.release().then(() => port.close(), die);
      return;
    }
    try {
      fault.reached();
    } catch (error) {
      die(error);
    }
    void execute(session, message);
  });
}

async function execute(session: OpenedSession['session'], message: RunMessage): Promise<void> {
  const started = process.hrtime.bigint();
  try {
    const feeds = Object.fromEntries(message.inputs.map((t) => [t.name, toOrt(t)]));
    const inputReady = process.hrtime.bigint();
    const results = await session.run(feeds, [...message.outputNames]);
    const inferDone = process.hrtime.bigint();
    const outputs: Tensor[] = message.outputNames.map((name) => fromOrt(name, results[name]!));
    const finished = process.hrtime.bigint();
    const timings = {
      computeInputNs: Number(inputReady - started),
      computeInferNs: Number(inferDone - inputReady),
      computeOutputNs: Number(finished - inferDone),
    };
    post({ type: 'result', id: message.id, outputs, timings }, transferList(outputs));
  } catch (error) {
    post({ type: 'error', id: message.id, message: describe(error) });
  }
}

main().catch(die);
