// The server-side half of a point, read the way perf_analyzer reads it: the statistics extension's
// cumulative counters, snapshotted at both ends of the window and diffed.

export interface Duration {
  readonly count: number;
  readonly ns: number;
}

export interface StatsSnapshot {
  readonly inferenceCount: number;
  readonly executionCount: number;
  readonly success: Duration;
  readonly fail: Duration;
  readonly queue: Duration;
  readonly computeInput: Duration;
  readonly computeInfer: Duration;
  readonly computeOutput: Duration;
  /** Total compute ns (input + infer + output) and executions, by batch size. */
  readonly batches: ReadonlyMap<number, Duration>;
}

interface StatsJson {
  model_stats?: {
    inference_count: number | string;
    execution_count: number | string;
    inference_stats: Record<string, { count: number | string; ns: number | string }>;
    batch_stats?: { batch_size: number | string; compute_input: RawDuration; compute_infer: RawDuration; compute_output: RawDuration }[];
  }[];
}
type RawDuration = { count: number | string; ns: number | string };

export async function fetchStats(http: string, model: string): Promise<StatsSnapshot> {
  const response = await fetch(`${http}/v2/models/${encodeURIComponent(model)}/stats`);
  if (!response.ok) throw new Error(`stats of ${model}: HTTP ${response.status} ${await response.text()}`);
  const stat = ((await response.json()) as StatsJson).model_stats?.[0];
  if (!stat) throw new Error(`stats of ${model}: no model_stats entry`);
  const d = (raw: RawDuration | undefined): Duration => ({ count: Number(raw?.count ?? 0), ns: Number(raw?.ns ?? 0) });
  const s = stat.inference_stats;
  const batches = new Map<number, Duration>();
  for (const b of stat.batch_stats ?? []) {
    // Every execution records all three phases once, so any phase's count is the execution count.
    batches.set(Number(b.batch_size), { count: Number(b.compute_infer.count), ns: d(b.compute_input).ns + d(b.compute_infer).ns + d(b.compute_output).ns });
  }
  return {
    inferenceCount: Number(stat.inference_count),
    executionCount: Number(stat.execution_count),
    success: d(s['success']),
    fail: d(s['fail']),
    queue: d(s['queue']),
    computeInput: d(s['compute_input']),
    computeInfer: d(s['compute_infer']),
    computeOutput: d(s['compute_output']),
    batches,
  };
}

const DURATION_KEYS = ['success', 'fail', 'queue', 'computeInput', 'computeInfer', 'computeOutput'] as const;

/** after − before; with sign = 1 instead, before + after (to add up the windows of one point). */
export function combineStats(before: StatsSnapshot, after: StatsSnapshot, sign: 1 | -1): StatsSnapshot {
  const op = (a: number, b: number): number => a + sign * b;
  const durations = Object.fromEntries(DURATION_KEYS.map((key) => [key, { count: op(after[key].count, before[key].count), ns: op(after[key].ns, before[key].ns) }])) as Record<
    (typeof DURATION_KEYS)[number],
    Duration
  >;
  const batches = new Map<number, Duration>();
  for (const size of new Set([...before.batches.keys(), ...after.batches.keys()])) {
    const a = after.batches.get(size) ?? { count: 0, ns: 0 };
    const b = before.batches.get(size) ?? { count: 0, ns: 0 };
    const combined = { count: op(a.count, b.count), ns: op(a.ns, b.ns) };
    if (combined.count !== 0) batches.set(size, combined);
  }
  return {
    inferenceCount: op(after.inferenceCount, before.inferenceCount),
    executionCount: op(after.executionCount, before.executionCount),
    ...durations,
    batches,
  };
}

export const EMPTY_STATS: StatsSnapshot = combineStats(emptyLike(), emptyLike(), 1);

function emptyLike(): StatsSnapshot {
  const zero = { count: 0, ns: 0 };
  return { inferenceCount: 0, executionCount: 0, success: zero, fail: zero, queue: zero, computeInput: zero, computeInfer: zero, computeOutput: zero, batches: new Map() };
}

/** Per-request and per-execution averages of a delta, in ms (NaN where nothing ran). */
export interface ServerSplit {
  readonly requests: number;
  readonly failed: number;
  readonly inferences: number;
  readonly executions: number;
  readonly avgBatch: number;
  /** Averages per request; compute is that of the batch the request ran in. */
  readonly requestMs: number;
  readonly queueMs: number;
  readonly computeInputMs: number;
  readonly computeInferMs: number;
  readonly computeOutputMs: number;
  /** request − (queue + compute): what the server spent outside queue and model. */
  readonly overheadMs: number;
  /** Compute of one execution (input + infer + output), averaged over executions. */
  readonly batchComputeMs: number;
  /** Executions and mean compute ms by batch size. */
  readonly byBatch: Readonly<Record<string, { readonly executions: number; readonly computeMs: number }>>;
}

export function serverSplit(delta: StatsSnapshot): ServerSplit {
  const perRequest = (ns: number): number => (delta.success.count > 0 ? ns / delta.success.count / 1e6 : NaN);
  let batchNs = 0;
  let executions = 0;
  const byBatch: Record<string, { executions: number; computeMs: number }> = {};
  for (const [size, d] of [...delta.batches.entries()].sort(([a], [b]) => a - b)) {
    batchNs += d.ns;
    executions += d.count;
    byBatch[String(size)] = { executions: d.count, computeMs: d.ns / d.count / 1e6 };
  }
  const computeNs = delta.computeInput.ns + delta.computeInfer.ns + delta.computeOutput.ns;
  return {
    requests: delta.success.count,
    failed: delta.fail.count,
    inferences: delta.inferenceCount,
    executions: delta.executionCount,
    avgBatch: delta.executionCount > 0 ? delta.inferenceCount / delta.executionCount : NaN,
    requestMs: perRequest(delta.success.ns),
    queueMs: perRequest(delta.queue.ns),
    computeInputMs: perRequest(delta.computeInput.ns),
    computeInferMs: perRequest(delta.computeInfer.ns),
    computeOutputMs: perRequest(delta.computeOutput.ns),
    overheadMs: perRequest(delta.success.ns - delta.queue.ns - computeNs),
    batchComputeMs: executions > 0 ? batchNs / executions / 1e6 : NaN,
    byBatch,
  };
}
