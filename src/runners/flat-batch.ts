// A step's rows as one flat batch of tokens (the paged runners' input): each row's tokens and
// positions one after another, and which flat positions are sampled — so logits are computed
// only there — with where each sampling row's logits land in the output.

import type { ScheduledRequest } from '../contracts/generate.js';
import type { RawTensor } from '../runtime/model-session.js';

/** Rows of the logits output that belong to one request (allLogits rows get one per token). */
export interface LogitsRowRange {
  readonly requestId: string;
  readonly first: number;
  readonly count: number;
}

export interface FlatBatch {
  /** [num_tokens] int64 each. */
  readonly inputIds: RawTensor;
  readonly positionIds: RawTensor;
  /** [num_logits] int64: the flat positions whose logits are computed. */
  readonly logitsIndices: RawTensor;
  readonly logitsRows: readonly LogitsRowRange[];
  /** Row s's first flat token. */
  readonly starts: readonly number[];
}

export function flatBatch(rows: readonly ScheduledRequest[]): FlatBatch {
  const numTokens = rows.reduce((sum, r) => sum + r.tokenIds.length, 0);
  const ids = new BigInt64Array(numTokens);
  const positions = new BigInt64Array(numTokens);
  const kept: number[] = [];
  const logitsRows: LogitsRowRange[] = [];
  const starts: number[] = [];
  let token = 0;
  for (const r of rows) {
    const count = r.tokenIds.length;
    starts.push(token);
    for (let k = 0; k < count; k++) {
      ids[token + k] = BigInt(r.tokenIds[k]!);
      positions[token + k] = BigInt(r.numComputedTokens + k);
    }
    // A checked proposal (numDraftTokens) needs the logits after the fed token and after each proposal.
    const wanted = r.allLogits ? count : r.sample ? 1 + (r.numDraftTokens ?? 0) : 0;
    if (wanted > 0) {
      logitsRows.push({ requestId: r.requestId, first: kept.length, count: wanted });
      for (let k = count - wanted; k < count; k++) kept.push(token + k);
    }
    token += count;
  }
  // A call of prefill chunks that all continue later samples nothing: it still asks for one row, which is dropped.
  if (kept.length === 0) kept.push(numTokens - 1);
  const vector = (data: BigInt64Array): RawTensor => ({ type: 'int64', dims: [data.length], data });
  return { inputIds: vector(ids), positionIds: vector(positions), logitsIndices: vector(BigInt64Array.from(kept, BigInt)), logitsRows, starts };
}
