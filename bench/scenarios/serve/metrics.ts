// A run's numbers from its requests, with vLLM's `bench serve` definitions so the two can be read
// side by side: only completed requests count; TPOT = (E2E − TTFT) / (output − 1), only where
// output > 1; ITL is the flat list of every gap between token events of every request; the
// throughputs divide by the wall time of the whole run; a request is "good" when it meets every
// SLO given, with TPOT 0 for a one-token request. Distributions use the population standard
// deviation and linearly interpolated percentiles, as numpy does.

import { percentile } from '../../harness/stats.js';
import type { RequestOutput } from './client.js';

export interface Distribution {
  readonly n: number;
  readonly mean: number;
  readonly median: number;
  readonly std: number;
  readonly p90: number;
  readonly p99: number;
}

/** SLOs in ms, as `--goodput ttft:500 tpot:50 e2el:2000` gives them. */
export interface GoodputSlo {
  readonly ttftMs?: number;
  readonly tpotMs?: number;
  readonly e2elMs?: number;
}

export interface ServeMetrics {
  readonly completed: number;
  readonly failed: number;
  readonly firstError?: string;
  readonly durationS: number;
  readonly totalInputTokens: number;
  readonly totalOutputTokens: number;
  /** Completed requests per second. */
  readonly requestThroughput: number;
  /** Output tokens per second. */
  readonly outputThroughput: number;
  /** (input + output tokens) per second. */
  readonly totalTokenThroughput: number;
  /** Requests meeting every SLO per second; null without SLOs. */
  readonly requestGoodput: number | null;
  readonly goodRequests: number | null;
  readonly ttftMs: Distribution;
  readonly tpotMs: Distribution;
  readonly itlMs: Distribution;
  readonly e2elMs: Distribution;
  /** Most token events in any one-second bucket since the first request started. */
  readonly maxOutputTokensPerS: number;
  /** Most requests in flight at once (the concurrency the server actually saw). */
  readonly maxConcurrentRequests: number;
}

export interface MetricsOptions {
  readonly slo?: GoodputSlo;
  /** Output tokens of a request whose server sent no usage (vLLM re-tokenizes the text). */
  readonly countTokens?: (text: string) => number;
}

/** vLLM reports 0 for an empty list; `n` says whether there was anything to summarize. */
export function distribution(values: readonly number[]): Distribution {
  if (values.length === 0) return { n: 0, mean: 0, median: 0, std: 0, p90: 0, p99: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, x) => sum + x, 0) / sorted.length;
  const variance = sorted.reduce((sum, x) => sum + (x - mean) ** 2, 0) / sorted.length;
  return { n: sorted.length, mean, median: percentile(sorted, 50), std: Math.sqrt(variance), p90: percentile(sorted, 90), p99: percentile(sorted, 99) };
}

export function outputLenOf(output: RequestOutput, countTokens?: (text: string) => number): number {
  if (output.outputTokens !== null) return output.outputTokens;
  // Without usage: the text re-tokenized, else one token per event (the first plus every gap).
  return countTokens ? countTokens(output.generatedText) : output.itlMs.length + 1;
}

/** TPOT of one completed request; 0 when it produced at most one token (no gaps to average). */
export function tpotOf(output: RequestOutput, outputLen: number): number {
  return outputLen > 1 ? (output.latencyMs - output.ttftMs) / (outputLen - 1) : 0;
}

export function calculateMetrics(outputs: readonly RequestOutput[], durationMs: number, options: MetricsOptions = {}): ServeMetrics {
  const done = outputs.filter((o) => o.success);
  const failed = outputs.filter((o) => !o.success);
  const outputLens = done.map((o) => outputLenOf(o, options.countTokens));
  const tpots = done.map((o, i) => tpotOf(o, outputLens[i]!));
  const totalInputTokens = done.reduce((sum, o) => sum + o.promptTokens, 0);
  const totalOutputTokens = outputLens.reduce((sum, n) => sum + n, 0);
  const durationS = durationMs / 1000;
  const perS = (count: number): number => (durationS > 0 ? count / durationS : 0);
  const goodRequests = options.slo && hasSlo(options.slo) ? done.filter((o, i) => meetsSlo(o, tpots[i]!, options.slo!)).length : null;
  return {
    completed: done.length,
    failed: failed.length,
    ...(failed[0]?.error === undefined ? {} : { firstError: failed[0].error }),
    durationS,
    totalInputTokens,
    totalOutputTokens,
    requestThroughput: perS(done.length),
    outputThroughput: perS(totalOutputTokens),
    totalTokenThroughput: perS(totalInputTokens + totalOutputTokens),
    requestGoodput: goodRequests === null ? null : perS(goodRequests),
    goodRequests,
    ttftMs: distribution(done.map((o) => o.ttftMs)),
    tpotMs: distribution(tpots.filter((_, i) => outputLens[i]! > 1)),
    itlMs: distribution(done.flatMap((o) => o.itlMs)),
    e2elMs: distribution(done.map((o) => o.latencyMs)),
    maxOutputTokensPerS: maxTokensPerSecond(done),
    maxConcurrentRequests: maxConcurrent(done),
  };
}

function hasSlo(slo: GoodputSlo): boolean {
  return slo.ttftMs !== undefined || slo.tpotMs !== undefined || slo.e2elMs !== undefined;
}

function meetsSlo(output: RequestOutput, tpotMs: number, slo: GoodputSlo): boolean {
  return (slo.ttftMs === undefined || output.ttftMs <= slo.ttftMs) && (slo.tpotMs === undefined || tpotMs <= slo.tpotMs) && (slo.e2elMs === undefined || output.latencyMs <= slo.e2elMs);
}

/** Each token event counts as one token, in one-second buckets from the earliest start. */
export function maxTokensPerSecond(done: readonly RequestOutput[]): number {
  if (done.length === 0) return 0;
  const origin = Math.min(...done.map((o) => o.startMs));
  const buckets = new Map<number, number>();
  const add = (atMs: number): void => {
    const bucket = Math.floor((atMs - origin) / 1000);
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + 1);
  };
  for (const o of done) {
    let at = o.startMs + o.ttftMs;
    add(at);
    for (const gap of o.itlMs) add((at += gap));
  }
  return Math.max(...buckets.values());
}

/** Sweep over [start, start + E2E) intervals; an end and a start at the same instant do not overlap. */
export function maxConcurrent(done: readonly RequestOutput[]): number {
  const edges = done.flatMap((o) => [
    { at: o.startMs, delta: 1 },
    { at: o.startMs + o.latencyMs, delta: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let open = 0;
  let most = 0;
  for (const edge of edges) {
    open += edge.delta;
    most = Math.max(most, open);
  }
  return most;
}
