// Sizing the KV cache from a memory budget. Runners allocate storage from the same layout, so the
// block count the scheduler plans with is the block count that exists.

import { invalidArg } from '../errors.js';

export const DEFAULT_BLOCK_SIZE = 16;

/** The model-side facts that fix how many bytes one block costs. */
export interface KvCacheLayout {
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  /** Bytes per stored element: 4 for fp32 storage, 2 for fp16 (Uint16Array), 1 for int8. */
  readonly elementBytes: number;
  /** Bytes stored per position and kv head beside its elements: an int8 row's float32 scale (0 or absent for float storage). */
  readonly rowScaleBytes?: number;
  /** Tokens per block. */
  readonly blockSize: number;
}

/** Bytes one block occupies across all layers: 2 (K and V) × layers × kv_heads × block_size × (head_dim × element bytes + row scale bytes). */
export function bytesPerBlock(layout: KvCacheLayout): number {
  const { rowScaleBytes = 0, ...sizes } = layout;
  for (const [name, value] of Object.entries(sizes)) {
    if (!Number.isInteger(value) || value < 1) throw invalidArg(`KV cache layout ${name} must be a positive integer, got ${value}`);
  }
  if (!Number.isInteger(rowScaleBytes) || rowScaleBytes < 0) throw invalidArg(`KV cache layout rowScaleBytes must be a non-negative integer, got ${rowScaleBytes}`);
  return 2 * layout.numLayers * layout.numKvHeads * layout.blockSize * (layout.headDim * layout.elementBytes + rowScaleBytes);
}

/** How many whole blocks fit in `budgetBytes`; at least one, or the budget is rejected as unusable. */
export function numBlocksForBudget(budgetBytes: number, layout: KvCacheLayout): number {
  const perBlock = bytesPerBlock(layout);
  const numBlocks = Math.floor(budgetBytes / perBlock);
  if (!Number.isFinite(numBlocks) || numBlocks < 1) {
    throw invalidArg(`kv_cache_bytes ${budgetBytes} holds no block of ${perBlock} bytes`, 'kv_cache_bytes');
  }
  return numBlocks;
}
