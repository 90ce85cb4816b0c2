// What the streaming scenario watches on the server while a load runs: the CPU time of the
// server process and of its main thread (from /proc; the engine computes on worker threads, so the
// main thread's share is the serving side: HTTP, framing, JSON, detokenized text), and the latency
// of GET /v2/health/ready and of a GET /metrics scrape on the HTTP port (the endpoint picker's: a
// scrape every 50 ms, metrics older than 200 ms read as saturated), each polled about every 50 ms.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

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

export interface LatencyPoll {
  /** Stops polling; resolves with every latency in ms and the count of answers that were not 200. */
  stop(): Promise<{ latenciesMs: number[]; failures: number }>;
}

/** Polls GET /v2/health/ready every `intervalMs`, one at a time. */
export const pollHealth = (http: string, intervalMs = 50): LatencyPoll => pollLatency(`${http}/v2/health/ready`, intervalMs);

/** Scrapes GET /metrics on the HTTP serving port every `intervalMs` (the body read whole, as Prometheus does), one at a time. */
export const pollMetrics = (http: string, intervalMs = 50): LatencyPoll => pollLatency(`${http}/metrics`, intervalMs);

/** GETs `url` every `intervalMs` (from the start of one poll to the next), one at a time. */
function pollLatency(url: string, intervalMs: number): LatencyPoll {
  const latenciesMs: number[] = [];
  let failures = 0;
  let stopped = false;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (!stopped) {
      const started = performance.now();
      try {
        const response = await fetch(url);
        await response.arrayBuffer();
        if (response.status !== 200) failures++;
      } catch {
        failures++;
      }
      const elapsed = performance.now() - started;
      latenciesMs.push(elapsed);
      if (stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, intervalMs - elapsed));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      wake?.();
      await loop;
      return { latenciesMs, failures };
    },
  };
}
