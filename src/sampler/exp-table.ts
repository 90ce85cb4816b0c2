// exp(−y) for the sampler's distances below the maximum, by table and polynomial.
//
// A distance y nats (after temperature) below the best token is scaled by 16 and rounded to a
// bucket (1/16 nat wide, 30 nats in all). The bucket doubles as the index into an exp table, so
// exp(−y) costs a lookup and a 4th-degree polynomial on the remainder (relative error < 3e-10,
// several times cheaper than Math.exp). The draw's top_k and top_p reuse the bucket as a histogram key.
// The logprobs' log-sum-exp lives here too, beside the kernel its loop over the whole row calls.

// The kernels read these module-private constants, never the exported names below: V8 does not
// constant-fold a module's exported bindings, so each read in a loop loads the export's cell and
// checks its type (that alone made logSumExpNear's pass ~35% slower). Callers likewise keep the
// exported names out of their loops.
const NATS = 30;
const SCALE = 16;
const BUCKETS = NATS * SCALE + 4;

/** Tokens further below the maximum than this (nats, after temperature) have negligible mass. */
export const NEGLIGIBLE_NATS = NATS;
export const PER_NAT = SCALE;
export const NUM_BUCKETS = BUCKETS;

const EXP_TABLE = new Float64Array(BUCKETS);
for (let k = 0; k < BUCKETS; k++) EXP_TABLE[k] = Math.exp(-k / SCALE);

/** The bucket of a scaled distance y ≥ 0: round(y), the last bucket collecting everything past 30 nats. */
export function bucketAt(y: number): number {
  return Math.min((y + 0.5) | 0, BUCKETS - 1);
}

/** exp(−y / 16) for y in [0, 30·16] given k = round(y): table × Taylor series on |d| ≤ 1/32. */
export function expScaled(y: number, k: number): number {
  const d = (k - y) / SCALE;
  return (EXP_TABLE[k] ?? 0) * (1 + d * (1 + d * (0.5 + d * (1 / 6 + d / 24))));
}

/**
 * log Σ exp(row[i]) over row[0, n), given its maximum. Terms more than NEGLIGIBLE_NATS below the
 * maximum are skipped: each is < 1e-13 of the largest and together they move the result by less
 * than V·e^-30 ≈ 1.4e-8 on a 151,936 vocabulary, below float32 logit precision.
 */
export function logSumExpNear(row: Float32Array, n: number, max: number): number {
  if (!Number.isFinite(max)) return max;
  const floor = max - NATS;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const x = row[i]!;
    if (x >= floor) {
      const y = (max - x) * SCALE;
      sum += expScaled(y, (y + 0.5) | 0);
    }
  }
  return max + Math.log(sum);
}
