// Sizing the KV cache from a memory budget. Runners allocate storage from the same layout, so the
// block count the scheduler plans with is the block count that exists.

import { invalidArg } from '../errors.js';

export const DEFAULT_BLOCK_SIZE = 16;

/** The model-side facts that fix how many bytes one block costs. */
export interface KvCacheLayout {
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  /** Bytes per stored element: 4 for fp32 storage, 2 for fp16 (Uint16Array). */
  readonly elementBytes: number;
  /** Tokens per block. */
  readonly blockSize: number;
}

/** Bytes one block occupies across all layers: 2 (K and V) × layers × kv_heads × block_size × head_dim × element bytes. */
export function bytesPerBlock(layout: KvCacheLayout): number {
  for (const [name, value] of Object.entries(layout)) {
    if (!Number.isInteger(value) || value < 1) throw invalidArg(`KV cache layout ${name} must be a positive integer, got ${value}`);
  }
  return 2 * layout.numLayers * layout.numKvHeads * layout.blockSize * layout.headDim * layout.elementBytes;
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
