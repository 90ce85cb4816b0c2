// The greedy token of chosen positions, picked inside the model: the argmax of their logits over
// the ids a tokenizer can produce. A decode step at batch 32 on a 151,936-token vocabulary returns
// 19.5 MB of logits; onnxruntime-node copies every output into a fresh JavaScript buffer (page
// faults and zeroing on each step, which on these VMs cost up to 55 ms of system time a step) and
// the sampler then scans all of it for the one id a greedy row needs (5 ms at batch 32). When
// every sampled row of a step is plain greedy the runner asks for these ids instead (one int64 a
// row) and the logits never leave ONNX Runtime.
//
// A head of its own beside the logits head, on the same table: ONNX Runtime runs every node of a
// graph whatever is fetched, so each head computes only the positions it is given — a step feeds
// its sampled positions to one head and none to the other, and the lm_head runs once. ArgMax
// keeps the first of equal maxima (select_last_index 0), as the sampler's argmax does. The ids at
// or past `sampleable_vocab` (embedding rows padded past the tokenizer) are cut off first, so the
// choice is the sampler's argmax over [0, sampleable) exactly. ArgMax runs on float32 (ONNX
// Runtime's CPU ArgMax has no float16 kernel); the cast is exact.

import { ONNX_DATA_TYPE } from './onnx/dtypes.js';
import type { GraphBuilder } from './onnx/graph-builder.js';

/**
 * The graph's names: inputs `greedy_indices` [num_greedy] int64 (flat positions, as the logits
 * head's logits_indices) and `sampleable_vocab` [1] int64 (ids at or past it are never chosen);
 * output `greedy_token_ids` [num_greedy] int64.
 */
export const GREEDY_TOKENS = { indicesInput: 'greedy_indices', sampleableInput: 'sampleable_vocab', output: 'greedy_token_ids' } as const;

/** Adds the head: `hidden` [num_tokens, hidden] (after the final norm), `lmHeadRows` the logits head's projection of gathered rows. */
export function greedyTokens(g: GraphBuilder, hidden: string, lmHeadRows: (rows: string) => string): void {
  const rows = g.op1('Gather', [hidden, g.input(GREEDY_TOKENS.indicesInput, 'int64', ['num_greedy'])], { axis: 0 });
  const logits = g.op1('Slice', [lmHeadRows(rows), g.ints([0]), g.input(GREEDY_TOKENS.sampleableInput, 'int64', [1]), g.ints([1])]);
  const asFloat = g.floatType === 'float16' ? g.op1('Cast', [logits], { to: ONNX_DATA_TYPE.float32 }) : logits;
  g.output(g.op1('ArgMax', [asFloat], { axis: 1, keepdims: 0, select_last_index: 0 }), GREEDY_TOKENS.output, 'int64', ['num_greedy']);
}

/** Reference: row-major rows of `width`, the first maximum of each row over [0, sampleable). NaN never wins. */
export function greedyTokensReference(logits: ArrayLike<number>, width: number, sampleable: number): number[] {
  const ids: number[] = [];
  for (let row = 0; row < logits.length / width; row++) {
    let best = 0;
    let bestValue = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < Math.min(sampleable, width); i++) {
      const x = logits[row * width + i]!;
      if (x > bestValue) [best, bestValue] = [i, x];
    }
    ids.push(best);
  }
  return ids;
}
