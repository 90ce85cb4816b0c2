// The paged pool's layout is the graph's contract ([kv_heads, num_blocks, block_size, head_dim]):
// positions written through any block table read back from exactly block_tables[p / block_size],
// slot p % block_size, of every kv head, and nothing else changes; copyBlock copies one block of
// every head, layer and kind.
import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import type { ModelShape } from '../../../src/runners/model-runner.js';
import { PagedKvStorage } from '../../../src/runners/paged-kv-storage.js';

const shape: ModelShape = { numLayers: 2, numKvHeads: 3, headDim: 4, vocabSize: 10, kvType: 'float32' };

/** The element of (head, position, d) as the graph reads it: the contract's index formula. */
function read(pool: PagedKvStorage, array: Float32Array, table: readonly number[], head: number, position: number, d: number): number {
  const block = table[Math.floor(position / pool.blockSize)]!;
  return array[((head * pool.numBlocks + block) * pool.blockSize + (position % pool.blockSize)) * shape.headDim + d]!;
}

describe('PagedKvStorage', () => {
  it('writes new tokens at their positions through shuffled block tables, in chunks that cross blocks, touching nothing else', () => {
    const random = new SeededRandom(11);
    for (let trial = 0; trial < 50; trial++) {
      const blockSize = 1 + (random.nextUint32() % 5);
      const pool = new PagedKvStorage(shape, 12, blockSize);
      const length = 1 + (random.nextUint32() % (blockSize * 4));
      const blocks = Array.from({ length: 12 }, (_, i) => i).sort(() => random.next() - 0.5);
      const table = blocks.slice(0, Math.ceil(length / blockSize));
      // [tokens, kv_heads, head_dim] as the graph's new_key.{i} comes out; written in random chunks.
      const fresh = Float32Array.from({ length: length * shape.numKvHeads * shape.headDim }, (_, i) => i + 1);
      for (let position = 0; position < length; ) {
        const count = Math.min(length - position, 1 + (random.nextUint32() % 4));
        const chunk = fresh.subarray(position * shape.numKvHeads * shape.headDim);
        pool.write(1, 'value', table, position, count, chunk, 0);
        position += count;
      }
      const values = pool.values[1] as Float32Array;
      for (let p = 0; p < length; p++)
        for (let h = 0; h < shape.numKvHeads; h++) for (let d = 0; d < shape.headDim; d++) expect(read(pool, values, table, h, p, d)).toBe(fresh[(p * shape.numKvHeads + h) * shape.headDim + d]);
      const written = length * shape.numKvHeads * shape.headDim;
      expect(values.reduce((n, x) => n + (x !== 0 ? 1 : 0), 0)).toBe(written);
      for (const untouched of [pool.keys[0], pool.keys[1], pool.values[0]]) expect(untouched!.every((x) => x === 0)).toBe(true);
    }
  });

  it('writes from a token offset of a flat batch (the second sequence of a call)', () => {
    const pool = new PagedKvStorage(shape, 4, 2);
    const fresh = Float32Array.from({ length: 5 * shape.numKvHeads * shape.headDim }, (_, i) => i);
    pool.write(0, 'key', [3, 1], 1, 2, fresh, 3); // tokens 3 and 4 go to positions 1 and 2
    const keys = pool.keys[0] as Float32Array;
    for (let h = 0; h < shape.numKvHeads; h++) {
      expect(read(pool, keys, [3, 1], h, 1, 0)).toBe(fresh[(3 * shape.numKvHeads + h) * shape.headDim]);
      expect(read(pool, keys, [3, 1], h, 2, 3)).toBe(fresh[(4 * shape.numKvHeads + h) * shape.headDim + 3]);
    }
  });

  it('copyBlock copies one block of every head, layer and kind', () => {
    const pool = new PagedKvStorage(shape, 5, 3);
    for (const a of [...pool.keys, ...pool.values]) for (let i = 0; i < a.length; i++) a[i] = i;
    pool.copyBlock(4, 1);
    for (const a of [...pool.keys, ...pool.values] as Float32Array[]) {
      for (let h = 0; h < shape.numKvHeads; h++)
        for (let p = 0; p < 3; p++)
          for (let d = 0; d < shape.headDim; d++)
            expect(read(pool, a, [1], h, p, d)).toBe(
              read(
                pool,
                Float32Array.from({ length: a.length }, (_, i) => i),
                [4],
                h,
                p,
                d,
              ),
            );
      expect(read(pool, a, [2], 0, 0, 0)).toBe(((0 * 5 + 2) * 3 + 0) * shape.headDim);
    }
    expect(pool.dims).toEqual([3, 5, 3, 4]);
  });
});
