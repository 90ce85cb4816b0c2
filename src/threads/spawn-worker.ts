// Starts a worker thread running a TypeScript (or compiled) module of this project.

import { Worker } from 'node:worker_threads';

const BOOTSTRAP = new URL('./worker-bootstrap.mjs', import.meta.url);

/** `entry` is the worker module's URL, as its folder's entry.ts exports it. */
export function spawnWorker(entry: URL, data: object): Worker {
  return new Worker(BOOTSTRAP, { workerData: { ...data, entry: entry.href } });
}
