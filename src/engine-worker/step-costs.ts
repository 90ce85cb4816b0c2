// What a step of n rows (scheduled tokens) costs on this engine's model and machine, learned from
// the steps it runs: speculation's gate (spec-decode.ts) weighs a verify step's extra rows against
// the tokens its drafts yield. How much a proposed position costs depends on the model and the
// machine, not on anything a config could state: on the copier (487 MB, weights-bound) a 5-row
// verify step costs 1.25-1.3x a decode step, on stories260K (1 MB, all overhead) 1.4-2.2x, and
// past 8 rows a native-layers step falls back to ONNX Runtime, several times the cost. Pure: the
// engine reports each step's rows and wall time.

/** Steps of each row count whose median is the cost: a few, so a garbage collection or a slow moment on a shared machine does not decide. */
const SAMPLES_KEPT = 9;

export class StepCosts {
  /** The latest SAMPLES_KEPT step times of each row count, ms (oldest first). */
  private readonly samples = new Map<number, number[]>();
  /** Each row count's median, kept as its samples change: the gate reads costs per sequence per step. */
  private readonly medians = new Map<number, number>();
  /** Measured row counts, ascending. */
  private rowCounts: number[] = [];

  /** A step of `rows` scheduled tokens took `ms`. */
  observe(rows: number, ms: number): void {
    if (!(rows > 0) || !Number.isFinite(ms) || ms < 0) return;
    const kept = this.samples.get(rows);
    if (kept) {
      kept.push(ms);
      if (kept.length > SAMPLES_KEPT) kept.shift();
    } else {
      this.samples.set(rows, [ms]);
      this.rowCounts = [...this.samples.keys()].sort((a, b) => a - b);
    }
    this.medians.set(rows, median(this.samples.get(rows)!));
  }

  /**
   * What a step of `rows` costs, ms: the median of that row count's latest steps, or between the
   * nearest measured counts below and above it (linear); undefined past the largest measured
   * count, or below the smallest (nothing there to go by).
   */
  cost(rows: number): number | undefined {
    const exact = this.medians.get(rows);
    if (exact !== undefined) return exact;
    const above = this.rowCounts.findIndex((count) => count > rows);
    if (above <= 0) return undefined;
    const [low, high] = [this.rowCounts[above - 1]!, this.rowCounts[above]!];
    const [lowMs, highMs] = [this.medians.get(low)!, this.medians.get(high)!];
    return lowMs + ((highMs - lowMs) * (rows - low)) / (high - low);
  }

  /** cost(rows) / cost(baseRows); undefined while either is unknown. */
  ratio(rows: number, baseRows: number): number | undefined {
    const [cost, base] = [this.cost(rows), this.cost(baseRows)];
    return cost === undefined || base === undefined || base <= 0 ? undefined : cost / base;
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
