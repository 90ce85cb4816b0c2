// A point's numbers from its measured windows: client throughput and latency percentiles over
// every response inside the windows, and the server split from the summed statistics deltas.

import { percentile } from '../../harness/stats.js';
import { combineStats, EMPTY_STATS, serverSplit, type ServerSplit } from './server-stats.js';
import type { WindowResult } from './window.js';

export interface PointMetrics {
  readonly windows: number;
  readonly durationS: number;
  readonly completed: number;
  readonly errors: number;
  readonly firstError?: string;
  /** Completed requests per second; every request is batch 1, so this is infer/s. */
  readonly throughput: number;
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  /** Longest wait, after a window, for the server to finish what the stopped clients left queued. */
  readonly maxSettleMs: number;
  readonly server: ServerSplit;
}

export function pointMetrics(windows: readonly WindowResult[]): PointMetrics {
  const latencies = windows.flatMap((w) => w.latenciesMs).sort((a, b) => a - b);
  const durationS = windows.reduce((sum, w) => sum + w.durationS, 0);
  const errors = windows.reduce((sum, w) => sum + w.errors, 0);
  const firstError = windows.find((w) => w.firstError !== undefined)?.firstError;
  const server = windows.reduce((sum, w) => combineStats(sum, w.server, 1), EMPTY_STATS);
  const at = (p: number): number => (latencies.length > 0 ? percentile(latencies, p) : NaN);
  return {
    windows: windows.length,
    durationS,
    completed: latencies.length,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    throughput: durationS > 0 ? latencies.length / durationS : NaN,
    meanMs: latencies.length > 0 ? latencies.reduce((a, b) => a + b, 0) / latencies.length : NaN,
    p50Ms: at(50),
    p90Ms: at(90),
    p99Ms: at(99),
    maxSettleMs: Math.max(...windows.map((w) => w.settleMs)),
    server: serverSplit(server),
  };
}

/** One line for the progress log after a measured window. */
export function pointLine(id: string, m: PointMetrics): string {
  const s = m.server;
  const errors = m.errors > 0 ? `, ${m.errors} errors (${m.firstError})` : '';
  return (
    `${id}: ${m.throughput.toFixed(1)} infer/s, p50 ${m.p50Ms.toFixed(1)} / p99 ${m.p99Ms.toFixed(1)} ms, ` +
    `avg batch ${s.avgBatch.toFixed(1)}, queue ${s.queueMs.toFixed(1)} ms, compute ${(s.computeInputMs + s.computeInferMs + s.computeOutputMs).toFixed(1)} ms${errors}`
  );
}
