// Which prefill rows share a model call. An Optimum decoder call is rectangular: every row is
// padded to the longest new chunk and the longest past, so one row that continues a long prompt
// (a chunk remainder: few new tokens, long past) batched with a fresh prompt (many new tokens,
// no past) makes every row pay for both — the fresh prompt attends over the other's past and the
// remainder runs a whole chunk of padded positions through every layer. Measured on the bench
// decoder, such a mixed call took twice as long as the two rows run apart. This policy merges rows
// only while the padding costs less than another call. A paged-attention call pads only its
// attention (FLAT_CALL_COST), so the same policy merges far more there.

/** A row's shape as a call sees it: positions already cached and positions fed now. */
export interface RowShape {
  readonly past: number;
  readonly fresh: number;
}

/**
 * The work of one position through the projections and MLP, in units of one query attending to
 * one key. A guess that holds for small and mid-sized decoders (hidden 512–4096): it only has to
 * rank groupings, and padding waste that matters is many times either side of it.
 */
const TOKEN_WORK = 1024;

/** The fixed cost of a model call (weights read at least once, feeds, launch), in positions. */
const CALL_WORK = 16 * TOKEN_WORK;

/**
 * Attention scores per head a merged call may materialise (rows × chunk × total keys): one fresh
 * 1,024-token prompt's worth. Past that the scores outgrow the caches and batching stops paying:
 * on the bench decoder (2 cores) two fresh 1,024-token prompts in one call took 2.7× one alone,
 * while 32 rows of 128 tokens (a half of this) batch as well as ever. A single row over it still
 * runs, alone.
 */
export const MAX_MERGED_SCORES = 1024 * 1024;

/** Attention scores per head of a call: every padded query row against every padded key. */
export function scoresPerHead(rows: number, past: number, fresh: number): number {
  return rows * fresh * (past + fresh);
}

/** A call as the cost model sees it: every row padded to the longest past and chunk, and the real new positions. */
export interface CallShape {
  readonly rows: number;
  readonly past: number;
  readonly fresh: number;
  readonly tokens: number;
}

/** How much a call of a given shape costs a runner; it only has to rank groupings. */
export type CallCost = (call: CallShape) => number;

/** Work of one call over `rows` padded rows of `fresh` new positions after `past` cached ones. */
export function paddedWork(rows: number, past: number, fresh: number): number {
  return rows * fresh * (TOKEN_WORK + past + fresh) + CALL_WORK;
}

/** An Optimum decoder call is rectangular: every padded position goes through every layer. */
export const RECTANGULAR_CALL_COST: CallCost = ({ rows, past, fresh }) => paddedWork(rows, past, fresh);

/**
 * A paged-attention call runs its tokens flat through the projections and MLP (no padding there)
 * and pads only attention: each sequence's queries to the longest chunk, its keys to the longest
 * past.
 */
export const FLAT_CALL_COST: CallCost = ({ rows, past, fresh, tokens }) => tokens * TOKEN_WORK + rows * fresh * (past + fresh) + CALL_WORK;

/**
 * Partitions row indices into calls: rows sorted by chunk length then past, each joining the
 * first group whose work (by `cost`) grows by less than running it alone would cost and that
 * stays within MAX_MERGED_SCORES. Pure, so it is tested on shapes; a single group keeps the
 * input order.
 */
export function groupRows(shapes: readonly RowShape[], cost: CallCost = RECTANGULAR_CALL_COST): number[][] {
  const order = shapes.map((_, i) => i).sort((a, b) => shapes[b]!.fresh - shapes[a]!.fresh || shapes[b]!.past - shapes[a]!.past || a - b);
  const groups: { members: number[]; past: number; fresh: number; tokens: number }[] = [];
  for (const index of order) {
    const row = shapes[index]!;
    const alone = cost({ rows: 1, past: row.past, fresh: row.fresh, tokens: row.fresh });
    const target = groups.find((g) => {
      const merged = { rows: g.members.length + 1, past: Math.max(g.past, row.past), fresh: Math.max(g.fresh, row.fresh), tokens: g.tokens + row.fresh };
      if (scoresPerHead(merged.rows, merged.past, merged.fresh) > MAX_MERGED_SCORES) return false;
      return cost(merged) <= cost({ rows: g.members.length, past: g.past, fresh: g.fresh, tokens: g.tokens }) + alone;
    });
    if (target) {
      target.members.push(index);
      target.past = Math.max(target.past, row.past);
      target.fresh = Math.max(target.fresh, row.fresh);
      target.tokens += row.fresh;
    } else {
      groups.push({ members: [index], past: row.past, fresh: row.fresh, tokens: row.fresh });
    }
  }
  return groups.map((g) => g.members.sort((a, b) => a - b));
}
