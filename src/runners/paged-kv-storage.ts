// The paged decoder's KV pool: per layer, one K and one V typed array laid out
// [kv_heads, num_blocks, block_size, head_dim] — kv-head major, so the graph's Gather of a
// sequence's blocks along axis 1 lands as [kv_heads, seqs, positions, head_dim], the layout its
// attention multiplies, with no transpose. The arrays are fed to every call as they are
// (onnxruntime-node wraps a typed array without copying it); only new positions are written here.
// An int8 pool (the native kernel's, which writes and reads it) follows each block's rows with
// their float32 scales: a block is still one contiguous piece to copy.

import type { KvArray } from './kv-storage.js';
import { KV_STORAGE, type KvPoolArray, type ModelShape } from './model-runner.js';

export class PagedKvStorage {
  readonly keys: KvPoolArray[];
  readonly values: KvPoolArray[];
  /** Elements of one (kv head, block): block_size × head_dim, and an int8 block's scales. */
  private readonly blockStride: number;
  /** Elements of one kv head's blocks: num_blocks × block_size × head_dim. */
  private readonly headStride: number;

  constructor(
    readonly shape: ModelShape,
    readonly numBlocks: number,
    readonly blockSize: number,
  ) {
    const { elementBytes, rowScaleBytes, array } = KV_STORAGE[shape.kvType];
    this.blockStride = blockSize * (shape.headDim + rowScaleBytes / elementBytes);
    this.headStride = numBlocks * this.blockStride;
    const size = shape.numKvHeads * this.headStride;
    this.keys = Array.from({ length: shape.numLayers }, () => array(size));
    this.values = Array.from({ length: shape.numLayers }, () => array(size));
  }

  /** The pool's dims as the graph's key_cache.{i} / value_cache.{i} inputs declare them. */
  get dims(): readonly number[] {
    return [this.shape.numKvHeads, this.numBlocks, this.blockSize, this.shape.headDim];
  }

  /**
   * Writes `count` positions starting at cache position `position` from `fresh`
   * ([tokens, kv_heads, head_dim], from token `fromToken`) into the request's blocks.
   */
  write(layer: number, kind: 'key' | 'value', blockTable: readonly number[], position: number, count: number, fresh: KvArray, fromToken: number): void {
    const target = kind === 'key' ? this.keys[layer]! : this.values[layer]!;
    const { numKvHeads: heads, headDim } = this.shape;
    for (let k = 0; k < count; k++) {
      const p = position + k;
      const slotBase = blockTable[Math.floor(p / this.blockSize)]! * this.blockStride + (p % this.blockSize) * headDim;
      const source = (fromToken + k) * heads * headDim;
      for (let h = 0; h < heads; h++) {
        const from = source + h * headDim;
        target.set(fresh.subarray(from, from + headDim), h * this.headStride + slotBase);
      }
    }
  }

  copyBlock(source: number, destination: number): void {
    for (const arrays of [this.keys, this.values]) {
      for (const a of arrays) {
        for (let h = 0; h < this.shape.numKvHeads; h++) {
          const base = h * this.headStride;
          a.copyWithin(base + destination * this.blockStride, base + source * this.blockStride, base + (source + 1) * this.blockStride);
        }
      }
    }
  }
}
