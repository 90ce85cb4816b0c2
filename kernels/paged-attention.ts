// Paged attention over a block pool, for a flat batch of tokens from many sequences (the
// model_paged.onnx contract). Sequence s's new tokens are rows query_starts[s] ..
// query_starts[s] + query_lengths[s] - 1 of the flat batch; its past positions live in the pool
// [kvHeads, numBlocks, blockSize, headDim] at block block_tables[s][p / blockSize], slot
// p % blockSize. New token j of s (at position past_lengths[s] + j) sees past positions
// 0 .. past_lengths[s]-1 and its own new tokens 0 .. j, nothing of another sequence; in a
// sliding-window layer only those of them less than `window` positions behind it (transformers'
// rule: key p is visible to query i iff i − window < p ≤ i). A plan is built per distinct window
// (pagedAttentionPlans), sharing the index rows.
//
// The pool is kv-head major, so Gather(pool, block_tables, axis 1) gives [kvH, S, MB, bs, D] and a
// reshape makes it [kvH, S, T, D] (T = MB·bs) without a transpose. Queries are gathered per
// sequence into [kvH, S, G·Qmax, D] (Qmax = the longest query, shorter ones padded by repeating
// their last row, discarded at the end). Scores against the past and against the sequence's own
// new keys are computed apart and meet only as scores: K/V are never concatenated.

import type { GraphBuilder } from './onnx/graph-builder.js';
import { LOWEST } from './causal-gqa-attention.js';
import type { RefTensor } from './reference/tensor.js';

/** The per-forward index and mask tensors, built once and shared by every layer. */
export interface PagedAttentionPlan {
  /** [S, Qmax] int64: flat row of sequence s's query j (clamped to its last row past its length). */
  readonly queryRows: string;
  /** [N] int64: row of flat token n in the [S·Qmax] per-sequence layout. */
  readonly outputRows: string;
  /** [1, S, 1, T] bool: pool position t of sequence s is in its past ([1, S, G·Qmax, T], rows ordered (g, j), with a window: and inside query j's). */
  readonly pastVisible: string;
  /** [1, 1, G·Qmax, Qmax] bool: causal among a sequence's new tokens (with a window: and inside it), rows ordered (g, j). */
  readonly newVisible: string;
  readonly blockTables: string;
}

export interface PagedLayout {
  /** [S] int64 each. */
  readonly queryStarts: string;
  readonly queryLengths: string;
  readonly pastLengths: string;
  /** [S, MB] int64. */
  readonly blockTables: string;
  /** Any layer's key pool: only its block size is read. */
  readonly keyCache: string;
  /** Any [N, ...] tensor of the flat batch (input_ids): only its length is read. */
  readonly flatTokens: string;
  /** Query heads per kv head. */
  readonly groups: number;
}

/** The plan of full causal attention. */
export function pagedAttentionPlan(g: GraphBuilder, l: PagedLayout): PagedAttentionPlan {
  return pagedAttentionPlans(g, l, [undefined]).get(undefined)!;
}

/**
 * One plan per distinct sliding window in `windows` (undefined: full causal attention), keyed by
 * it; their index rows are shared, only the visibility masks differ.
 */
export function pagedAttentionPlans(g: GraphBuilder, l: PagedLayout, windows: readonly (number | undefined)[]): Map<number | undefined, PagedAttentionPlan> {
  const dim = (tensor: string, axis: number): string => g.op1('Gather', [g.op1('Shape', [tensor]), g.ints(axis)], { axis: 0 }); // scalar
  const column = (x: string): string => g.op1('Unsqueeze', [x, g.ints([1])]); // [S] → [S, 1]
  const row = (x: string): string => g.op1('Unsqueeze', [x, g.ints([0])]); // [K] → [1, K]

  const longest = g.op1('ReduceMax', [l.queryLengths], { keepdims: 0 }); // Qmax, scalar
  const offsets = g.op1('Range', [g.ints(0), longest, g.ints(1)]); // [Qmax]
  const lastRow = g.op1('Sub', [column(l.queryLengths), g.ints(1)]);
  const queryRows = g.op1('Add', [column(l.queryStarts), g.op1('Min', [row(offsets), lastRow])]); // [S, Qmax]

  // Flat token n belongs to the last sequence whose start is <= n.
  const tokens = g.op1('Range', [g.ints(0), dim(l.flatTokens, 0), g.ints(1)]); // [N]
  const started = g.op1('Cast', [g.op1('LessOrEqual', [row(l.queryStarts), column(tokens)])], { to: 7 }); // [N, S]
  const sequence = g.op1('Sub', [g.op1('ReduceSum', [started, g.ints([1])], { keepdims: 0 }), g.ints(1)]); // [N]
  const within = g.op1('Sub', [tokens, g.op1('Gather', [l.queryStarts, sequence], { axis: 0 })]);
  const outputRows = g.op1('Add', [g.op1('Mul', [sequence, longest]), within]);

  const poolPositions = g.op1('Range', [g.ints(0), g.op1('Mul', [dim(l.blockTables, 1), dim(l.keyCache, 2)]), g.ints(1)]); // [T]
  const inPast = g.op1('Less', [row(poolPositions), column(l.pastLengths)]); // [S, T]
  // Built at first use, so a graph without windows has the nodes in the order it always had (same bytes).
  let causalNode: string | undefined;
  const causal = (): string => (causalNode ??= g.op1('LessOrEqual', [row(offsets), column(offsets)])); // [Qmax query, Qmax key]
  const byGroup = (x: string, axis: number): string => (l.groups === 1 ? x : g.op1('Tile', [x, g.ints(axis === 0 ? [l.groups, 1] : [1, l.groups, 1])]));

  const plans = new Map<number | undefined, PagedAttentionPlan>();
  for (const window of new Set(windows)) {
    if (window === undefined) {
      const pastVisible = g.op1('Unsqueeze', [inPast, g.ints([0, 2])]);
      plans.set(window, { queryRows, outputRows, pastVisible, newVisible: g.op1('Unsqueeze', [byGroup(causal(), 0), g.ints([0, 1])]), blockTables: l.blockTables });
      continue;
    }
    if (!Number.isInteger(window) || window < 1) throw new RangeError(`a sliding window is a positive whole number of positions, not ${window}`);
    // Query j of s sits at position past[s] + j; key position t is inside its window iff past[s] + j − t < window.
    const queryPositions = g.op1('Add', [column(l.pastLengths), row(offsets)]); // [S, Qmax]
    const pastDistance = g.op1('Sub', [g.op1('Unsqueeze', [queryPositions, g.ints([2])]), g.op1('Unsqueeze', [poolPositions, g.ints([0, 1])])]); // [S, Qmax, T]
    const pastInWindow = g.op1('And', [g.op1('Unsqueeze', [inPast, g.ints([1])]), g.op1('Less', [pastDistance, g.ints(window)])]);
    const newInWindow = g.op1('And', [causal(), g.op1('Less', [g.op1('Sub', [column(offsets), row(offsets)]), g.ints(window)])]); // [Qmax, Qmax]
    plans.set(window, {
      queryRows,
      outputRows,
      pastVisible: g.op1('Unsqueeze', [byGroup(pastInWindow, 1), g.ints([0])]),
      newVisible: g.op1('Unsqueeze', [byGroup(newInWindow, 0), g.ints([0, 1])]),
      blockTables: l.blockTables,
    });
  }
  return plans;
}

export interface PagedAttentionInputs {
  /** [N, H, D], rotary applied. */
  readonly query: string;
  /** [N, KVH, D] for this call's tokens, rotary applied to keys. */
  readonly key: string;
  readonly value: string;
  /** [KVH, numBlocks, blockSize, D]. */
  readonly keyCache: string;
  readonly valueCache: string;
  readonly plan: PagedAttentionPlan;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
}

/** Returns the attention output [N, H·D] in flat token order. */
export function pagedAttention(g: GraphBuilder, a: PagedAttentionInputs): string {
  const { plan, numKvHeads: kvHeads, headDim: dim } = a;
  const groups = a.numHeads / kvHeads;
  const lowest = g.floats(LOWEST[g.floatType]);
  const scaled = g.op1('Mul', [a.query, g.floats(1 / Math.sqrt(dim))]);
  const perSequence = g.op1('Gather', [scaled, plan.queryRows], { axis: 0 }); // [S, Qmax, H, D]
  const split = g.op1('Reshape', [perSequence, g.ints([0, 0, kvHeads, groups, dim])]);
  const byKvHead = g.op1('Transpose', [split], { perm: [2, 0, 3, 1, 4] }); // [KVH, S, G, Qmax, D]
  const query = g.op1('Reshape', [byKvHead, g.ints([kvHeads, 0, -1, dim])]); // [KVH, S, G·Qmax, D]

  const fromPool = (pool: string): string => g.op1('Reshape', [g.op1('Gather', [pool, plan.blockTables], { axis: 1 }), g.ints([kvHeads, 0, -1, dim])]); // [KVH, S, T, D]
  const fromCall = (flat: string): string => g.op1('Transpose', [g.op1('Gather', [flat, plan.queryRows], { axis: 0 })], { perm: [2, 0, 1, 3] }); // [KVH, S, Qmax, D]
  const transposed = (keys: string): string => g.op1('Transpose', [keys], { perm: [0, 1, 3, 2] });
  const [pastKey, pastValue] = [fromPool(a.keyCache), fromPool(a.valueCache)];
  const [newKey, newValue] = [fromCall(a.key), fromCall(a.value)];

  const pastScores = g.op1('Where', [plan.pastVisible, g.op1('MatMul', [query, transposed(pastKey)]), lowest]); // [KVH, S, G·Qmax, T]
  const newScores = g.op1('Where', [plan.newVisible, g.op1('MatMul', [query, transposed(newKey)]), lowest]); // [KVH, S, G·Qmax, Qmax]
  const probabilities = g.op1('Softmax', [g.op1('Concat', [pastScores, newScores], { axis: -1 })], { axis: -1 });
  const pastWidth = g.op1('Slice', [g.op1('Shape', [pastScores]), g.ints([3]), g.ints([4])]);
  const newWidth = g.op1('Slice', [g.op1('Shape', [newScores]), g.ints([3]), g.ints([4])]);
  const [pastProbabilities, newProbabilities] = g.op('Split', [probabilities, g.op1('Concat', [pastWidth, newWidth], { axis: 0 })], { axis: -1 }, { outputs: 2 }) as [string, string];
  const context = g.op1('Add', [g.op1('MatMul', [pastProbabilities, pastValue]), g.op1('MatMul', [newProbabilities, newValue])]); // [KVH, S, G·Qmax, D]

  const heads = g.op1('Reshape', [context, g.ints([kvHeads, 0, groups, -1, dim])]); // [KVH, S, G, Qmax, D]
  const rows = g.op1('Reshape', [g.op1('Transpose', [heads], { perm: [1, 3, 0, 2, 4] }), g.ints([-1, a.numHeads * dim])]); // [S·Qmax, H·D]
  return g.op1('Gather', [rows, plan.outputRows], { axis: 0 });
}

/** A flat batch's layout as plain numbers, for the reference. */
export interface PagedLayoutValues {
  readonly queryStarts: readonly number[];
  readonly queryLengths: readonly number[];
  readonly pastLengths: readonly number[];
  /** Row s: sequence s's block ids (extra entries ignored). */
  readonly blockTables: readonly (readonly number[])[];
  readonly blockSize: number;
  /** A sliding-window layer's window (pagedAttentionPlans); absent: full causal attention. */
  readonly slidingWindow?: number;
}

/**
 * Float64 reference. query [N, H, D]; key/value [N, KVH, D]; pools [KVH, numBlocks, blockSize, D].
 * Returns [N, H·D].
 */
export function pagedAttentionReference(query: RefTensor, key: RefTensor, value: RefTensor, keyCache: RefTensor, valueCache: RefTensor, layout: PagedLayoutValues): RefTensor {
  const [tokens, heads, dim] = query.dims as [number, number, number];
  const [kvHeads, blocks, blockSize] = keyCache.dims as [number, number, number];
  const groups = heads / kvHeads;
  const out = new Float64Array(tokens * heads * dim);
  layout.queryLengths.forEach((length, s) => {
    const start = layout.queryStarts[s]!;
    const past = layout.pastLengths[s]!;
    const table = layout.blockTables[s]!;
    for (let h = 0; h < heads; h++) {
      const kv = Math.floor(h / groups);
      const pool = (p: number): number => ((kv * blocks + table[Math.floor(p / blockSize)]!) * blockSize + (p % blockSize)) * dim;
      const flat = (t: number): number => ((start + t) * kvHeads + kv) * dim;
      for (let j = 0; j < length; j++) {
        const q = ((start + j) * heads + h) * dim;
        // Keys: past positions 0..past-1 from the pool, then new tokens 0..j from the call, those inside the window.
        const inWindow = (position: number): boolean => past + j - position < (layout.slidingWindow ?? Infinity);
        const keys = [
          ...Array.from({ length: past }, (_, p) => ({ data: keyCache.data, values: valueCache.data, at: pool(p), position: p })),
          ...Array.from({ length: j + 1 }, (_, t) => ({ data: key.data, values: value.data, at: flat(t), position: past + t })),
        ].filter((k) => inWindow(k.position));
        const scores = keys.map((k) => {
          let dot = 0;
          for (let d = 0; d < dim; d++) dot += query.data[q + d]! * k.data[k.at + d]!;
          return dot / Math.sqrt(dim);
        });
        const max = Math.max(...scores);
        const weights = scores.map((x) => Math.exp(x - max));
        const sum = weights.reduce((x, y) => x + y, 0);
        const o = ((start + j) * heads + h) * dim;
        keys.forEach((k, i) => {
          for (let d = 0; d < dim; d++) out[o + d]! += (weights[i]! / sum) * k.values[k.at + d]!;
        });
      }
    }
  });
  return { dims: [tokens, heads * dim], data: out };
}
