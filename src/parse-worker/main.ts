// The parse worker thread (entry.ts says what it is for). It runs below the server's priority,
// as the compute threads do: a 20 MB parse may take a second of CPU, and the serving thread must
// win every core it wants meanwhile.

import { parentPort, workerData } from 'node:worker_threads';
import { ConveyorError } from '../errors.js';
import { injectFault } from '../threads/fault-injection.js';
import { lowerThisThreadPriority } from '../threads/thread-priority.js';
import type { OffThreadAnswer, ParseJob, ParseResult, ParseWorkerData, WireError } from './entry.js';

type JobModule = { parseOffThread(input: unknown): OffThreadAnswer<unknown> };

const port = parentPort!;
lowerThisThreadPriority((workerData as ParseWorkerData).threadNice);
const modules = new Map<string, Promise<JobModule>>();

port.on('message', (job: ParseJob) => void run(job));

async function run(job: ParseJob): Promise<void> {
  let module = modules.get(job.module);
  if (module === undefined) {
    module = import(job.module) as Promise<JobModule>;
    modules.set(job.module, module);
  }
  let answer: OffThreadAnswer<unknown>;
  try {
    const jobModule = await module;
    if (job.fault !== undefined) injectFault(job.fault, `parse job ${job.id}`);
    answer = jobModule.parseOffThread(job.input);
  } catch (error) {
    const result: ParseResult = { id: job.id, error: toWire(error) };
    port.postMessage(result);
    return;
  }
  const result: ParseResult = { id: job.id, value: answer.value };
  port.postMessage(result, [...new Set(answer.transfer)]);
}

function toWire(error: unknown): WireError {
  if (error instanceof ConveyorError) return { code: error.code, message: error.message, ...(error.param !== undefined ? { param: error.param } : {}) };
  return { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) };
}
