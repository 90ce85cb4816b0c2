// Temperature, top_k and top_p over a candidate set, bucketed by distance from the maximum.
//
// Each candidate's scaled distance y = (max − logit) / T · 16 is rounded to a bucket (1/16 nat
// wide, 30 nats in all). The bucket doubles as the index into an exp table, so exp(−y/16) costs a
// lookup and a 4th-degree polynomial on the remainder (relative error < 3e-10, several times
// cheaper than Math.exp). top_k and top_p first find their boundary bucket from a histogram of
// counts or masses, keep every bucket above it wholesale, and run an exact partition only on the
// boundary bucket's few entries — no sort of the candidates.

import { keepTopK, keepTopMass } from './select.js';

/** Tokens further below the maximum than this (nats, after temperature) have negligible mass. */
export const NEGLIGIBLE_NATS = 30;
const PER_NAT = 16;
const NUM_BUCKETS = NEGLIGIBLE_NATS * PER_NAT + 4;

const EXP_TABLE = new Float64Array(NUM_BUCKETS);
for (let k = 0; k < NUM_BUCKETS; k++) EXP_TABLE[k] = Math.exp(-k / PER_NAT);

/** exp(−y / 16) for y in [0, 30·16] given k = round(y): table × Taylor series on |d| ≤ 1/32. */
function expScaled(y: number, k: number): number {
  const d = (k - y) / PER_NAT;
  return (EXP_TABLE[k] ?? 0) * (1 + d * (1 + d * (0.5 + d * (1 / 6 + d / 24))));
}

/**
 * log Σ exp(row[i]) over row[0, n), given its maximum. Terms more than NEGLIGIBLE_NATS below the
 * maximum are skipped: each is < 1e-13 of the largest and together they move the result by less
 * than V·e^-30 ≈ 1.4e-8 on a 151,936 vocabulary, below float32 logit precision.
 */
export function logSumExpNear(row: Float32Array, n: number, max: number): number {
  if (!Number.isFinite(max)) return max;
  const floor = max - NEGLIGIBLE_NATS;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const x = row[i]!;
    if (x >= floor) {
      const y = (max - x) * PER_NAT;
      sum += expScaled(y, (y + 0.5) | 0);
    }
  }
  return max + Math.log(sum);
}

/** Scratch for truncating one candidate set at a time (sized once per sampler). */
export class CandidateTruncation {
  private readonly counts = new Uint32Array(NUM_BUCKETS);
  private readonly masses = new Float64Array(NUM_BUCKETS);
  private readonly buckets: Uint16Array;
  // The boundary bucket's entries, set aside while the rest is compacted.
  private readonly sideIds: Int32Array;
  private readonly sideVals: Float64Array;
  /** Entries compact() kept at the front. */
  private front = 0;
  /** Mass left by the last weigh(). */
  total = 0;

  constructor(capacity: number) {
    this.buckets = new Uint16Array(capacity);
    this.sideIds = new Int32Array(capacity);
    this.sideVals = new Float64Array(capacity);
  }

  /**
   * top_k over candidates whose `vals` are logits (all within the window below `max`): keeps the
   * k largest plus ties with the k-th. Returns the kept count; kept entries are [0, count).
   */
  topK(ids: Int32Array, vals: Float64Array, count: number, k: number, max: number, temperature: number): number {
    if (k >= count) return count;
    const scale = PER_NAT / temperature;
    const buckets = this.buckets;
    const counts = this.counts;
    counts.fill(0);
    for (let j = 0; j < count; j++) {
      const b = bucketOf(max, vals[j]!, scale);
      buckets[j] = b;
      counts[b] = counts[b]! + 1;
    }
    let boundary = 0;
    let above = 0;
    while (above + counts[boundary]! < k) above += counts[boundary++]!;
    const side = this.compact(ids, vals, count, boundary);
    const keptSide = keepTopK(this.sideIds, this.sideVals, 0, side, k - above);
    return this.appendSide(ids, vals, this.front, keptSide);
  }

  /**
   * Drops candidates below `floor` and replaces each remaining logit with its unnormalized
   * probability exp((logit − max) / T), compacting in place. With `forTopP`, also records each
   * one's bucket and the mass per bucket. Returns the new count; the total mass is left in `total`.
   */
  weigh(ids: Int32Array, vals: Float64Array, count: number, max: number, temperature: number, floor: number, forTopP: boolean): number {
    const scale = PER_NAT / temperature;
    let total = 0;
    let w = 0;
    if (!forTopP) {
      for (let j = 0; j < count; j++) {
        const x = vals[j]!;
        if (x < floor) continue;
        const y = (max - x) * scale;
        const p = expScaled(y, Math.min((y + 0.5) | 0, NUM_BUCKETS - 1));
        ids[w] = ids[j]!;
        vals[w++] = p;
        total += p;
      }
      this.total = total;
      return w;
    }
    const buckets = this.buckets;
    const masses = this.masses;
    masses.fill(0);
    for (let j = 0; j < count; j++) {
      const x = vals[j]!;
      if (x < floor) continue;
      const y = (max - x) * scale;
      const k = Math.min((y + 0.5) | 0, NUM_BUCKETS - 1);
      const p = expScaled(y, k);
      ids[w] = ids[j]!;
      buckets[w] = k;
      vals[w++] = p;
      masses[k] = masses[k]! + p;
      total += p;
    }
    this.total = total;
    return w;
  }

  /**
   * top_p over the candidates of the last weigh(): keeps the most probable tokens while the
   * mass kept before each is below `target` (= top_p × total). Returns the kept count.
   */
  topP(ids: Int32Array, vals: Float64Array, count: number, target: number): number {
    const masses = this.masses;
    let boundary = 0;
    let above = 0;
    while (boundary < NUM_BUCKETS - 1 && above + masses[boundary]! < target) above += masses[boundary++]!;
    const side = this.compact(ids, vals, count, boundary);
    const keptSide = keepTopMass(this.sideIds, this.sideVals, 0, side, above, target);
    return this.appendSide(ids, vals, this.front, keptSide);
  }

  /**
   * Moves entries of buckets above `boundary` to the front (in order) and sets the boundary
   * bucket's entries aside; returns how many were set aside (`front` counts the rest). Copying
   * forward is safe because every position is read before anything is written to it.
   */
  private compact(ids: Int32Array, vals: Float64Array, count: number, boundary: number): number {
    const buckets = this.buckets;
    let w = 0;
    let side = 0;
    for (let j = 0; j < count; j++) {
      const b = buckets[j]!;
      if (b < boundary) {
        ids[w] = ids[j]!;
        vals[w++] = vals[j]!;
      } else if (b === boundary) {
        this.sideIds[side] = ids[j]!;
        this.sideVals[side++] = vals[j]!;
      }
    }
    this.front = w;
    return side;
  }

  private appendSide(ids: Int32Array, vals: Float64Array, at: number, keptSide: number): number {
    for (let j = 0; j < keptSide; j++) {
      ids[at + j] = this.sideIds[j]!;
      vals[at + j] = this.sideVals[j]!;
    }
    return at + keptSide;
  }
}

function bucketOf(max: number, logit: number, scale: number): number {
  return Math.min(((max - logit) * scale + 0.5) | 0, NUM_BUCKETS - 1);
}
