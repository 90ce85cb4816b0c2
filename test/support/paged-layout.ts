// Random block layouts for the paged-attention tests: shuffled pool block ids, optional prefix
// blocks shared by two sequences, padding entries in block_tables pointing at garbage blocks.

import type { PagedLayoutValues } from '../../kernels/paged-attention.js';
import type { SeededRandom } from '../../kernels/onnx/random.js';

export interface SequenceShape {
  readonly past: number;
  readonly query: number;
}

export interface RandomLayout extends PagedLayoutValues {
  readonly numBlocks: number;
  readonly maxBlocks: number;
  readonly numTokens: number;
  /** position_ids of the flat batch. */
  readonly positions: readonly number[];
}

/**
 * Lays `sequences` out in a pool of shuffled blocks. `sharedPrefixBlocks` > 0 makes sequence 1's
 * table start with sequence 0's first blocks (both pasts must cover them). Every table is padded
 * to the longest plus `paddingColumns` (default 1) with random block ids, and the pool gets `spareBlocks` blocks nobody owns.
 */
export function randomLayout(
  random: SeededRandom,
  blockSize: number,
  sequences: readonly SequenceShape[],
  options: { sharedPrefixBlocks?: number; spareBlocks?: number; paddingColumns?: number } = {},
): RandomLayout {
  const shared = options.sharedPrefixBlocks ?? 0;
  const owned = sequences.map((s, i) => Math.ceil(s.past / blockSize) - (i === 1 ? shared : 0));
  const numBlocks = owned.reduce((a, b) => a + b, 0) + (options.spareBlocks ?? 3);
  const ids = Array.from({ length: numBlocks }, (_, i) => i);
  for (let i = ids.length - 1; i > 0; i--) {
    const j = random.nextUint32() % (i + 1);
    [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  }
  let next = 0;
  const tables = owned.map((count) => ids.slice(next, (next += count)));
  if (shared > 0) tables[1] = [...tables[0]!.slice(0, shared), ...tables[1]!];
  const maxBlocks = Math.max(0, ...tables.map((t) => t.length)) + (options.paddingColumns ?? 1);
  const blockTables = tables.map((t) => [...t, ...random.ints(maxBlocks - t.length, numBlocks)]);
  const queryStarts: number[] = [];
  const positions: number[] = [];
  for (const s of sequences) {
    queryStarts.push(positions.length);
    for (let j = 0; j < s.query; j++) positions.push(s.past + j);
  }
  return {
    queryStarts,
    queryLengths: sequences.map((s) => s.query),
    pastLengths: sequences.map((s) => s.past),
    blockTables,
    blockSize,
    numBlocks,
    maxBlocks,
    numTokens: positions.length,
    positions,
  };
}
