// Starts a worker thread running a TypeScript (or compiled) module of this project.

import { Worker } from 'node:worker_threads';

const BOOTSTRAP = new URL('./worker-bootstrap.mjs', import.meta.url);

/**
 * The module a worker entry names in the layout this process runs from. Entries are declared by
 * their source name (`new URL('./main.ts', import.meta.url)`); the project runs either wholly
 * from its sources (tsx, vitest) or wholly from `npm run build`'s output, so this module's own
 * extension says which, and a compiled process loads the entry's `.js` twin, with no loader.
 */
export function runnableEntry(entry: URL, self: string = import.meta.url): URL {
  if (!self.endsWith('.js') || !entry.pathname.endsWith('.ts')) return entry;
  const compiled = new URL(entry.href);
  compiled.pathname = `${entry.pathname.slice(0, -'.ts'.length)}.js`;
  return compiled;
}

/** `entry` is the worker module's URL, as its folder's entry.ts exports it. */
export function spawnWorker(entry: URL, data: object): Worker {
  return new Worker(BOOTSTRAP, { workerData: { ...data, entry: runnableEntry(entry).href } });
}
