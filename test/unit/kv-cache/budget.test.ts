import { describe, expect, it } from 'vitest';
import { bytesPerBlock, DEFAULT_BLOCK_SIZE, numBlocksForBudget } from '../../../src/kv-cache/budget.js';
import { ConveyorError } from '../../../src/errors.js';

const qwenLike = { numLayers: 28, numKvHeads: 8, headDim: 128, elementBytes: 2, blockSize: DEFAULT_BLOCK_SIZE };

describe('KV cache budget', () => {
  it('costs 2 (K, V) × layers × kv_heads × block_size × head_dim × element bytes per block', () => {
    expect(DEFAULT_BLOCK_SIZE).toBe(16);
    expect(bytesPerBlock(qwenLike)).toBe(2 * 28 * 8 * 16 * 128 * 2);
    expect(bytesPerBlock({ ...qwenLike, elementBytes: 4 })).toBe(2 * bytesPerBlock(qwenLike));
    // int8 rows carry a float32 scale each: head_dim + 4 bytes a row.
    expect(bytesPerBlock({ ...qwenLike, elementBytes: 1, rowScaleBytes: 4 })).toBe(2 * 28 * 8 * 16 * (128 + 4));
  });

  it('fits whole blocks only', () => {
    const perBlock = bytesPerBlock(qwenLike);
    expect(numBlocksForBudget(2 ** 30, qwenLike)).toBe(Math.floor(2 ** 30 / perBlock));
    expect(numBlocksForBudget(perBlock * 3 + perBlock - 1, qwenLike)).toBe(3);
  });

  it('rejects a budget smaller than one block and a malformed layout', () => {
    expect(() => numBlocksForBudget(100, qwenLike)).toThrow(ConveyorError);
    expect(() => numBlocksForBudget(100, qwenLike)).toThrow(/holds no block/);
    expect(() => bytesPerBlock({ ...qwenLike, headDim: 0 })).toThrow(/headDim/);
    expect(() => bytesPerBlock({ ...qwenLike, numKvHeads: 1.5 })).toThrow(/numKvHeads/);
    expect(() => bytesPerBlock({ ...qwenLike, rowScaleBytes: -4 })).toThrow(/rowScaleBytes/);
  });
});
