// The KV cache's memory: per layer, one K and one V typed array laid out
// [num_blocks, kv_heads, block_size, head_dim]. The block manager (src/kv-cache) decides which
// blocks a request owns; this module only moves numbers in and out of them.

import type { DecoderLayout } from './decoder-layout.js';

export type KvArray = Float32Array | Uint16Array;

export class KvStorage {
  readonly keys: KvArray[];
  readonly values: KvArray[];
  /** Elements per (block, head): block_size × head_dim. */
  private readonly headStride: number;

  constructor(
    readonly layout: DecoderLayout,
    readonly numBlocks: number,
    readonly blockSize: number,
  ) {
    const size = numBlocks * layout.numKvHeads * blockSize * layout.headDim;
    const make = (): KvArray => (layout.kvType === 'float16' ? new Uint16Array(size) : new Float32Array(size));
    this.keys = Array.from({ length: layout.numLayers }, make);
    this.values = Array.from({ length: layout.numLayers }, make);
    this.headStride = blockSize * layout.headDim;
  }

  /**
   * Copies positions [0, length) of a request into `past` ([rows, heads, pastLen, D]) at row `row`,
   * right-aligned (left padding) so every row's newest past token sits at pastLen - 1. The padding
   * is zeroed: `past` may be a reused buffer, and a masked position must still hold a finite value.
   */
  gather(layer: number, kind: 'key' | 'value', blockTable: readonly number[], length: number, past: KvArray, row: number, pastLen: number): void {
    const source = kind === 'key' ? this.keys[layer]! : this.values[layer]!;
    const { numKvHeads: heads, headDim } = this.layout;
    for (let h = 0; h < heads; h++) {
      const rowStart = (row * heads + h) * pastLen * headDim;
      const destBase = rowStart + (pastLen - length) * headDim;
      if (destBase > rowStart) past.fill(0, rowStart, destBase);
      for (let j = 0, start = 0; start < length; j++, start += this.blockSize) {
        const n = Math.min(this.blockSize, length - start);
        const src = (blockTable[j]! * heads + h) * this.headStride;
        past.set(source.subarray(src, src + n * headDim), destBase + start * headDim);
      }
    }
  }

  /**
   * Writes `count` new positions, starting at cache position `position`, from `present`
   * ([rows, heads, totalLen, D], row `row`, from index `fromIndex`) into the request's blocks.
   */
  scatter(layer: number, kind: 'key' | 'value', blockTable: readonly number[], position: number, count: number, present: KvArray, row: number, totalLen: number, fromIndex: number): void {
    const target = kind === 'key' ? this.keys[layer]! : this.values[layer]!;
    const { numKvHeads: heads, headDim } = this.layout;
    for (let h = 0; h < heads; h++) {
      const srcBase = ((row * heads + h) * totalLen + fromIndex) * headDim;
      for (let k = 0; k < count; ) {
        const p = position + k;
        const slot = p % this.blockSize;
        const n = Math.min(this.blockSize - slot, count - k); // contiguous within one block
        const dest = ((blockTable[Math.floor(p / this.blockSize)]! * heads + h) * this.blockSize + slot) * headDim;
        target.set(present.subarray(srcBase + k * headDim, srcBase + (k + n) * headDim), dest);
        k += n;
      }
    }
  }

  copyBlock(source: number, destination: number): void {
    const span = this.layout.numKvHeads * this.headStride;
    for (const arrays of [this.keys, this.values]) {
      for (const a of arrays) a.copyWithin(destination * span, source * span, (source + 1) * span);
    }
  }
}
