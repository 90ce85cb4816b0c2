// A worker for the thread-priority test: lowers its own priority by workerData.steps, starts a
// child thread, and reports its kernel thread id, its nice value, the child's, and the log line.
import { readlinkSync } from 'node:fs';
import { parentPort, Worker, workerData } from 'node:worker_threads';
import { lowerThisThreadPriority, threadNice } from '../../../src/threads/thread-priority.js';

const tid = (): number => Number(readlinkSync('/proc/thread-self').split('/').pop());
const { steps } = workerData as { steps: number };
const note = lowerThisThreadPriority(steps);
// The child stays alive (a listening port keeps its thread) until terminated: a thread that has
// exited has no /proc/self/task/<tid> left to read its nice value from.
const child = new Worker(
  "const { readlinkSync } = require('node:fs'); const { parentPort } = require('node:worker_threads'); parentPort.on('message', () => {}); parentPort.postMessage(Number(readlinkSync('/proc/thread-self').split('/').pop()));",
  { eval: true },
);
const childTid = await new Promise<number>((resolve) => child.once('message', resolve));
parentPort!.postMessage({ tid: tid(), nice: threadNice(tid()), childNice: threadNice(childTid), note });
await child.terminate();
