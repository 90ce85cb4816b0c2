// Entry of every worker thread. Workers run the TypeScript sources directly (as the main thread
// does under tsx), so the TypeScript loader is registered inside the worker before the real
// entry is imported: Node 20 does not pass the parent's loader hooks to workers.
import { workerData } from 'node:worker_threads';

if (workerData.entry.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(workerData.entry);
