// What a soak watches on the server, once a second: resident memory (/proc), event-loop lag and
// the LLM engine's gauges from its Prometheus endpoint, worker liveness and restarts, and the
// latency of GET /v2/health/ready.

import { readFileSync } from 'node:fs';
import { LLM_GAUGES, LLM_PREFIX, PROCESS_METRICS } from '../../../src/metrics/metric-definitions.js';

const KV_USAGE = `${LLM_PREFIX}${LLM_GAUGES.kvCacheUsage.name}`;
const RUNNING = `${LLM_PREFIX}${LLM_GAUGES.numRunning.name}`;
const WAITING = `${LLM_PREFIX}${LLM_GAUGES.numWaiting.name}`;

export interface Sample {
  /** Seconds since the soak started. */
  readonly t: number;
  readonly rssMiB: number | null;
  readonly lagP99Ms: number | null;
  readonly lagMaxMs: number | null;
  readonly healthMs: number | null;
  readonly healthStatus: number | null;
  readonly kvUsage: number | null;
  readonly running: number | null;
  readonly waiting: number | null;
  /** Lowest conveyor_worker_alive over every worker (0 = some worker is down). */
  readonly workersAlive: number | null;
  /** Sum of every *restarts_total counter the server exports (0 where it exports none). */
  readonly restarts: number;
}

/** Values of every series of `name` in a Prometheus text exposition. */
export function metricValues(exposition: string, name: string): number[] {
  const values: number[] = [];
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const value = Number(rest.slice(rest.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) values.push(value);
  }
  return values;
}

/** Sum of every counter whose name ends in `restarts_total`. */
export function restartsIn(exposition: string): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*restarts_total)(\{[^}]*\})? (\S+)$/.exec(line);
    if (match) sum += Number(match[3]);
  }
  return sum;
}

export function rssMiB(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

const first = (values: readonly number[]): number | null => (values.length > 0 ? values[0]! : null);
const sumOrNull = (values: readonly number[]): number | null => (values.length > 0 ? values.reduce((a, b) => a + b, 0) : null);

export interface ServerEndpoints {
  readonly http: string;
  readonly metrics: string;
  readonly pid: number;
}

export async function sample(server: ServerEndpoints, t: number): Promise<Sample> {
  const healthStarted = performance.now();
  const health = await fetch(`${server.http}/v2/health/ready`, { signal: AbortSignal.timeout(10_000) }).then(
    async (r) => {
      await r.arrayBuffer();
      return r.status;
    },
    () => null,
  );
  const healthMs = health === null ? null : performance.now() - healthStarted;
  const exposition = await fetch(`${server.metrics}/metrics`, { signal: AbortSignal.timeout(10_000) }).then(
    (r) => r.text(),
    () => '',
  );
  const ms = (seconds: number | null): number | null => (seconds === null ? null : seconds * 1000);
  const alive = metricValues(exposition, PROCESS_METRICS.workerAlive.name);
  return {
    t,
    rssMiB: rssMiB(server.pid),
    lagP99Ms: ms(first(metricValues(exposition, 'nodejs_eventloop_lag_p99_seconds'))),
    lagMaxMs: ms(first(metricValues(exposition, 'nodejs_eventloop_lag_max_seconds'))),
    healthMs,
    healthStatus: health,
    kvUsage: sumOrNull(metricValues(exposition, KV_USAGE)),
    running: sumOrNull(metricValues(exposition, RUNNING)),
    waiting: sumOrNull(metricValues(exposition, WAITING)),
    workersAlive: alive.length > 0 ? Math.min(...alive) : null,
    restarts: restartsIn(exposition),
  };
}

/**
 * Starts the server's event-loop lag window afresh before the load begins. The process series
 * (nodejs_eventloop_lag_*) are read in the first scrape, then at most once a second after the
 * scrape that finds them stale (src/metrics/registry.ts), each reading resetting the histogram;
 * without this, the first sample's max is everything since the process started (module loading,
 * model loads before the server listens), which no client ever waited on.
 */
export async function resetLagWindow(server: ServerEndpoints, refreshMs: number): Promise<void> {
  await sample(server, 0);
  await new Promise((resolve) => setTimeout(resolve, refreshMs + 100));
  // This scrape finds the reading stale and queues the next one, which covers only the wait.
  await sample(server, 0);
}

export interface Monitor {
  readonly samples: Sample[];
  stop(): Promise<void>;
}

/** Samples every `intervalMs` (one at a time) until stopped. */
export function startMonitor(server: ServerEndpoints, intervalMs: number): Monitor {
  const samples: Sample[] = [];
  const started = performance.now();
  let stopped = false;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (!stopped) {
      const begun = performance.now();
      samples.push(await sample(server, (begun - started) / 1000));
      if (stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, intervalMs - (performance.now() - begun)));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();
  return {
    samples,
    stop: async () => {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}
