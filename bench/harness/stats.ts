// Summary statistics of timing samples. Percentiles interpolate linearly between the two
// nearest ranks (numpy's default), so small sample counts still give smooth, comparable values.

export interface Stats {
  readonly n: number;
  readonly mean: number;
  readonly median: number;
  readonly p90: number;
  readonly p99: number;
  readonly min: number;
  readonly max: number;
  /** Sample standard deviation (divides by n − 1); 0 for a single sample. */
  readonly stddev: number;
}

/** The p-th percentile (0..100) of already sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new Error('percentile of no samples');
  if (p < 0 || p > 100) throw new Error(`percentile ${p} outside 0..100`);
  const rank = (p / 100) * (sorted.length - 1);
  const lower = Math.floor(rank);
  const upper = Math.ceil(rank);
  const fraction = rank - lower;
  return sorted[lower]! + (sorted[upper]! - sorted[lower]!) * fraction;
}

export function summarize(samples: readonly number[]): Stats {
  if (samples.length === 0) throw new Error('summarize: no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  const mean = sorted.reduce((sum, x) => sum + x, 0) / n;
  const squares = sorted.reduce((sum, x) => sum + (x - mean) ** 2, 0);
  return {
    n,
    mean,
    median: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    min: sorted[0]!,
    max: sorted[n - 1]!,
    stddev: n > 1 ? Math.sqrt(squares / (n - 1)) : 0,
  };
}

/** value / baseline; undefined when the baseline is missing or zero (no meaningful ratio). */
export function ratio(value: number, baseline: number | undefined): number | undefined {
  if (baseline === undefined || baseline === 0 || !Number.isFinite(baseline)) return undefined;
  return value / baseline;
}
