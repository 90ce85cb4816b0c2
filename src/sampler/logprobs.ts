// Logprobs, computed beside the draw: the log-softmax over the sampleable vocabulary of a row
// (the processed row, or the model's raw one), and its most probable alternatives.

import type { PromptTokenLogprob, TopLogprob } from '../contracts/generate.js';
import { logSumExpNear } from './exp-table.js';
import { argmax, topN } from './select.js';

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
 * A given token's logprob under the model's raw distribution row[0, n) (prompt logprobs: the
 * token is the prompt's next, not a draw), its rank and the `numTop` most likely alternatives.
 */
export function tokenLogprobIn(row: Float32Array, n: number, tokenId: number, numTop: number, table: LogprobTable): PromptTokenLogprob {
  const { lse, top } = table.basis(row, n, row[argmax(row, n)]!, numTop);
  const logit = row[tokenId]!;
  let above = 0;
  for (let i = 0; i < n; i++) if (row[i]! > logit) above++;
  return { tokenId, logprob: logit - lse, top, rank: above + 1 };
}
