// The paged decoder's KV pool: per layer, one K and one V typed array laid out
// [kv_heads, num_blocks, block_size, head_dim] — kv-head major, so the graph's Gather of a
// sequence's blocks along axis 1 lands as [kv_heads, seqs, positions, head_dim], the layout its
// attention multiplies, with no transpose. The arrays are fed to every call as they are
// (onnxruntime-node wraps a typed array without copying it); only new positions are written here.

import type { KvArray } from './kv-storage.js';
import type { ModelShape } from './model-runner.js';

export class PagedKvStorage {
  readonly keys: KvArray[];
  readonly values: KvArray[];
  /** Elements of one (kv head, block): block_size × head_dim. */
  private readonly blockStride: number;
  /** Elements of one kv head's blocks: num_blocks × block_size × head_dim. */
  private readonly headStride: number;

  constructor(
    readonly shape: ModelShape,
    readonly numBlocks: number,
    readonly blockSize: number,
  ) {
    this.blockStride = blockSize * shape.headDim;
    this.headStride = numBlocks * this.blockStride;
    const size = shape.numKvHeads * this.headStride;
    const make = (): KvArray => (shape.kvType === 'float16' ? new Uint16Array(size) : new Float32Array(size));
    this.keys = Array.from({ length: shape.numLayers }, make);
    this.values = Array.from({ length: shape.numLayers }, make);
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
