// Starts a worker thread running a TypeScript (or compiled) module of this project.

import { Worker } from 'node:worker_threads';

const BOOTSTRAP = new URL('./worker-bootstrap.mjs', import.meta.url);

/** `entry` is the module's URL (e.g. new URL('./instance-worker.ts', import.meta.url)). */
export function spawnWorker(entry: URL, data: object): Worker {
  return new Worker(BOOTSTRAP, { workerData: { ...data, entry: entry.href } });
}
