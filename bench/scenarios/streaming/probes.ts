// What the streaming scenario watches on the server while a load runs: the CPU time of the
// server process and of its main thread (from /proc; the engine computes on worker threads, so the
// main thread's share is the serving side: HTTP, framing, JSON, detokenized text), and the latency
// of GET /v2/health/ready and of a GET /metrics scrape on the HTTP port (the endpoint picker's: a
// scrape every 50 ms, metrics older than 200 ms read as saturated), each polled about every 50 ms.

import { execFileSync, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface CpuSample {
  /** CPU ms (user + system) of the main thread (the thread whose id is the process id). */
  readonly mainMs: number;
  /** CPU ms of the whole process, every thread. */
  readonly processMs: number;
}

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** utime + stime of a /proc stat file, in ms. Fields are counted after the `(comm)`, which may hold spaces. */
function statCpuMs(path: string): number {
  const text = readFileSync(path, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / clockTicks();
}

/** Undefined where /proc is not there (not Linux). */
export function readCpu(pid: number): CpuSample | undefined {
  try {
    return { mainMs: statCpuMs(`/proc/${pid}/task/${pid}/stat`), processMs: statCpuMs(`/proc/${pid}/stat`) };
  } catch {
    return undefined;
  }
}

export interface PollResult {
  /** Every latency in ms, in order. */
  readonly latenciesMs: number[];
  /** Answers that were not 200, and requests that failed. */
  readonly failures: number;
}

export interface LatencyPolls {
  /** Stops polling; resolves with one result per URL, in the order given. */
  stop(): Promise<PollResult[]>;
}

export interface Poller {
  /** Polls each of `urls` every interval, one request at a time per URL; resolves once the polls have begun. */
  start(urls: readonly string[]): Promise<LatencyPolls>;
  /** Ends the poller's process. */
  close(): void;
}

const POLLER = fileURLToPath(new URL('./poller-process.mjs', import.meta.url));

/**
 * Starts the probes' own process (poller-process.mjs), polling every `intervalMs` when asked.
 * One per bench, started before anything lowers this process's priority: a process inherits its
 * parent's nice value, and the probes must run at the server's, as an endpoint picker would.
 */
export async function openPoller(intervalMs = 50): Promise<Poller> {
  const child = fork(POLLER, [String(intervalMs)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`the poller process exited (code ${code}) before it answered`))));
  exited.catch(() => {}); // observed through next()
  const next = (type: string): Promise<{ results?: PollResult[] }> =>
    Promise.race([
      new Promise<{ results?: PollResult[] }>((resolve) => {
        const listen = (message: { type?: string; results?: PollResult[] }) => {
          if (message?.type !== type) return;
          child.off('message', listen);
          resolve(message);
        };
        child.on('message', listen);
      }),
      exited,
    ]);
  await next('ready');
  return {
    start: async (urls) => {
      const started = next('started');
      child.send({ type: 'start', urls });
      await started;
      return {
        stop: async () => {
          const answer = next('results');
          child.send({ type: 'stop' });
          return (await answer).results!;
        },
      };
    },
    close: () => child.disconnect(),
  };
}

/** GET /v2/health/ready and GET /metrics on the HTTP serving port (the endpoint picker's scrape), polled together. */
export const healthAndMetricsUrls = (http: string): [string, string] => [`${http}/v2/health/ready`, `${http}/metrics`];
