// The native paged-attention kernel (src/runtime/native/paged-attention.c) against the float64
// reference of the paged contract, on random block layouts: shuffled blocks, prefix blocks shared
// by two sequences, partial last blocks, decode tokens and prefill chunks mixed in one flat batch,
// float32 and float16 pools and activations, one and several threads. The kernel writes the new
// K/V into the pool itself, so the test also checks that write against the reference's view.

import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { float16BitsToFloat32, toFloat16Array } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { pagedAttentionReference } from '../../../kernels/paged-attention.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import { type KernelArray, type KernelShape, type KernelType, loadPagedAttentionKernel, type PagedAttentionKernel } from '../../../src/runtime/paged-attention-kernel.js';
import { relativeError } from '../../support/onnx.js';
import { randomLayout, type RandomLayout, type SequenceShape } from '../../support/paged-layout.js';

let kernel: PagedAttentionKernel;
beforeAll(async () => {
  const availability = await loadPagedAttentionKernel();
  // These machines have a C compiler and Node's headers: a kernel that does not build is a failure here, not a skip.
  if ('unavailable' in availability) throw new Error(`native kernel unavailable: ${availability.unavailable}`);
  kernel = availability.kernel;
});

const asKernel = (values: Float32Array, type: KernelType): KernelArray => (type === 'float32' ? values : toFloat16Array(values));
const asFloat32 = (values: KernelArray): Float32Array => (values instanceof Float32Array ? values : Float32Array.from(values, float16BitsToFloat32));

interface Case {
  readonly heads: number;
  readonly kvHeads: number;
  readonly dim: number;
  readonly blockSize: number;
  readonly sequences: readonly SequenceShape[];
  readonly sharedPrefixBlocks: number;
  readonly activationType: KernelType;
  readonly kvType: KernelType;
  readonly threads: number;
  readonly seed: number;
}

/** The kernel's output and the reference's, on the same random data and layout. */
function run(c: Case): { error: number; layout: RandomLayout } {
  const random = new SeededRandom(c.seed);
  // One spare column past the longest table and room for the new tokens' blocks, which randomLayout does not own.
  const withNew = c.sequences.map((s) => ({ past: s.past + s.query, query: s.query }));
  const layout = randomLayout(random, c.blockSize, withNew, { sharedPrefixBlocks: c.sharedPrefixBlocks });
  const n = layout.numTokens;
  const data = (count: number): Float32Array => random.uniformWithStd(count, 1.5);
  // Values as the kernel's element type sees them, so float16 rounding of the inputs is not counted as error.
  const rounded = (values: Float32Array, type: KernelType) => asFloat32(asKernel(values, type));
  const q = rounded(data(n * c.heads * c.dim), c.activationType);
  const [k, v] = [rounded(data(n * c.kvHeads * c.dim), c.activationType), rounded(data(n * c.kvHeads * c.dim), c.activationType)];
  const poolSize = c.kvHeads * layout.numBlocks * c.blockSize * c.dim;
  const [keyPool, valuePool] = [asKernel(rounded(data(poolSize), c.kvType), c.kvType), asKernel(rounded(data(poolSize), c.kvType), c.kvType)];
  const pasts = c.sequences.map((s) => s.past);
  const poolDims = [c.kvHeads, layout.numBlocks, c.blockSize, c.dim];
  // The reference sees the pool as it was (the past) and the call's own K/V apart.
  const expected = pagedAttentionReference(
    refTensor([n, c.heads, c.dim], q),
    refTensor([n, c.kvHeads, c.dim], k),
    refTensor([n, c.kvHeads, c.dim], v),
    refTensor(poolDims, asFloat32(keyPool)),
    refTensor(poolDims, asFloat32(valuePool)),
    { ...layout, pastLengths: pasts },
  );
  const shape: KernelShape = {
    numSeqs: c.sequences.length,
    numHeads: c.heads,
    numKvHeads: c.kvHeads,
    headDim: c.dim,
    numBlocks: layout.numBlocks,
    blockSize: c.blockSize,
    maxBlocks: layout.maxBlocks,
    activationType: c.activationType,
    kvType: c.kvType,
  };
  const kernelLayout = {
    blockTables: Int32Array.from(layout.blockTables.flat()),
    queryStarts: Int32Array.from(layout.queryStarts),
    queryLengths: Int32Array.from(layout.queryLengths),
    pastLengths: Int32Array.from(pasts),
  };
  kernel.write(shape, kernelLayout, asKernel(k, c.activationType), asKernel(v, c.activationType), keyPool, valuePool);
  const out = c.activationType === 'float32' ? new Float32Array(n * c.heads * c.dim) : new Uint16Array(n * c.heads * c.dim);
  kernel.attend(shape, kernelLayout, asKernel(q, c.activationType), keyPool, valuePool, out, c.threads);
  return { error: relativeError(asFloat32(out), expected.data), layout };
}

// float16 K/V in the pool round the written rows; float16 outputs round the result (2^-11 relative).
const tolerance = (c: Case) => (c.activationType === 'float16' || c.kvType === 'float16' ? 3e-3 : 1e-5);

const headShapes = fc.constantFrom<readonly [number, number, number]>([4, 2, 8], [8, 2, 64], [4, 4, 8], [8, 1, 16], [16, 2, 128], [6, 2, 8]);
const caseArbitrary = fc
  .record({
    heads: headShapes,
    blockSize: fc.constantFrom(1, 2, 3, 4, 16),
    sequences: fc.array(fc.record({ past: fc.integer({ min: 0, max: 60 }), query: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 20 })) }), { minLength: 1, maxLength: 5 }),
    share: fc.boolean(),
    activationType: fc.constantFrom<KernelType>('float32', 'float16'),
    kvType: fc.constantFrom<KernelType>('float32', 'float16'),
    threads: fc.constantFrom(1, 2, 3),
    seed: fc.integer({ min: 1, max: 2 ** 30 }),
  })
  .map(({ heads: [heads, kvHeads, dim], share, ...rest }): Case => {
    const shareable = rest.sequences.length >= 2 ? Math.floor(Math.min(rest.sequences[0]!.past, rest.sequences[1]!.past) / rest.blockSize) : 0;
    return { heads, kvHeads, dim, sharedPrefixBlocks: share ? shareable : 0, ...rest };
  });

describe('native paged attention', () => {
  it('leaves the loading thread’s floating point alone: subnormal numbers stay subnormal', () => {
    // A library linked with -ffast-math sets flush-to-zero when loaded (GCC's crtfastmath.o):
    // 1e-310 × 1.5 would be 0 in this thread from then on, and every JavaScript number with it.
    const tiny = Number(String(1e-310));
    expect(tiny * 1.5).toBeGreaterThan(0);
    expect(Number.MIN_VALUE / 2 + Number(String(Number.MIN_VALUE))).toBeGreaterThan(0);
  });

  it('equals the float64 reference on random layouts (fast-check)', () => {
    fc.assert(
      fc.property(caseArbitrary, (c) => {
        const { error } = run(c);
        expect(error, JSON.stringify(c)).toBeLessThan(tolerance(c));
      }),
      { numRuns: 150 },
    );
  });

  it('a long prefill chunk over a long past, tiles of query tokens across threads', () => {
    const c: Case = {
      heads: 8,
      kvHeads: 2,
      dim: 64,
      blockSize: 16,
      sequences: [
        { past: 700, query: 37 },
        { past: 300, query: 1 },
        { past: 0, query: 65 },
      ],
      sharedPrefixBlocks: 0,
      activationType: 'float32',
      kvType: 'float32',
      threads: 2,
      seed: 11,
    };
    expect(run(c).error).toBeLessThan(1e-5);
  });

  it('refuses what would read outside the pool, and changes nothing', () => {
    const shape: KernelShape = { numSeqs: 1, numHeads: 2, numKvHeads: 1, headDim: 4, numBlocks: 2, blockSize: 2, maxBlocks: 2, activationType: 'float32', kvType: 'float32' };
    const pool = () => new Float32Array(2 * 2 * 4).fill(7);
    const layout = (blockTables: Int32Array, past: number, length: number) => ({ blockTables, queryStarts: Int32Array.of(0), queryLengths: Int32Array.of(length), pastLengths: Int32Array.of(past) });
    const [keyPool, valuePool] = [pool(), pool()];
    const fresh = new Float32Array(4);
    expect(() => kernel.write(shape, layout(Int32Array.of(0, 2), 2, 1), fresh, fresh, keyPool, valuePool)).toThrow(/outside the pool/);
    expect(() => kernel.write(shape, layout(Int32Array.of(0, 1), 4, 1), fresh, fresh, keyPool, valuePool)).toThrow(/more blocks than its table row/);
    expect(() => kernel.attend(shape, layout(Int32Array.of(0, 1), 1, 1), new Float32Array(2), keyPool, valuePool, new Float32Array(8), 1)).toThrow(/query/);
    expect(() => kernel.attend({ ...shape, kvType: 'float16' }, layout(Int32Array.of(0, 1), 1, 1), new Float32Array(8), keyPool, valuePool, new Float32Array(8), 1)).toThrow(/pool/);
    expect(() => kernel.attend({ ...shape, numHeads: 3, numKvHeads: 2 }, layout(Int32Array.of(0, 1), 1, 1), new Float32Array(8), keyPool, valuePool, new Float32Array(8), 1)).toThrow(/multiple/);
    expect([...keyPool, ...valuePool].every((x) => x === 7)).toBe(true);
  });
});
