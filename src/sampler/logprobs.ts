// Logprobs, computed beside the draw: the log-softmax over the sampleable vocabulary of a row
// (the processed row, or the model's raw one), and its most probable alternatives.

import type { TopLogprob } from '../contracts/generate.js';
import { NEGLIGIBLE_NATS, PER_NAT, expScaled } from './exp-table.js';
import { topN } from './select.js';

export interface LogprobBasis {
  /** log Σ exp over the row: a token's logprob is its logit minus this. */
  readonly lse: number;
  readonly top: TopLogprob[];
}

/** Scratch for the top alternatives, grown to the largest top_logprobs seen. */
export class LogprobTable {
  private topIds = new Int32Array(32);
  private topVals = new Float64Array(32);

  /** The basis of row[0, n), given its maximum (which the greedy pick or the draw already found). */
  basis(row: Float32Array, n: number, max: number, numTop: number): LogprobBasis {
    const lse = logSumExpNear(row, n, max);
    if (numTop > this.topIds.length) {
      this.topIds = new Int32Array(numTop);
      this.topVals = new Float64Array(numTop);
    }
    const found = topN(row, n, numTop, this.topIds, this.topVals);
    const top: TopLogprob[] = new Array(found);
    for (let i = 0; i < found; i++) top[i] = { tokenId: this.topIds[i]!, logprob: this.topVals[i]! - lse };
    return { lse, top };
  }
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
