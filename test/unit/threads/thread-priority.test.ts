// The compute-thread priority seam on this Linux machine: a worker that lowers its priority gets
// the nice value asked for (capped at 19), a thread it starts afterwards inherits it, the thread
// that started the worker keeps its own, and 0 steps changes nothing.
import { readlinkSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { MAX_NICE, threadNice } from '../../../src/threads/thread-priority.js';
import { spawnWorker } from '../../../src/threads/spawn-worker.js';

const PRIORITY_WORKER = new URL('../../support/workers/priority-worker.ts', import.meta.url);
const ownNice = (): number => threadNice(Number(readlinkSync('/proc/thread-self').split('/').pop()));

interface Report {
  readonly tid: number;
  readonly nice: number;
  readonly childNice: number;
  readonly note: string | null;
}

async function run(steps: number): Promise<Report> {
  const worker: Worker = spawnWorker(PRIORITY_WORKER, { steps });
  try {
    return await new Promise<Report>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
  } finally {
    await worker.terminate();
  }
}

describe('lowerThisThreadPriority', () => {
  it('lowers only the calling thread, and the threads it starts inherit the value', async () => {
    const base = ownNice();
    const report = await run(5);
    expect(report.nice).toBe(Math.min(MAX_NICE, base + 5));
    expect(report.childNice).toBe(report.nice);
    expect(report.note).toBe(`compute threads at nice ${report.nice} (the server's threads at ${base})`);
    expect(ownNice()).toBe(base);
  });

  it('caps at the lowest priority, and 0 steps changes nothing', async () => {
    const base = ownNice();
    expect((await run(100)).nice).toBe(MAX_NICE);
    const untouched = await run(0);
    expect(untouched).toMatchObject({ nice: base, childNice: base, note: null });
  });
});
