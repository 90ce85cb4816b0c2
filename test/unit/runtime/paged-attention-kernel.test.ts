// The native paged-attention kernel (src/runtime/native/paged-attention.c) against the float64
// reference of the paged contract, on random block layouts: shuffled blocks, prefix blocks shared
// by two sequences, partial last blocks, decode tokens and prefill chunks mixed in one flat batch,
// float32, float16 and int8 pools, float32 and float16 activations, one and several threads. The
// kernel writes the new K/V into the pool itself, so the test also checks that write against the
// reference's view (for int8, each written row within half a quantization step of its values).
// With a sliding window the same against the reference with that window, and the blocks wholly
// before every query's window filled with NaN: a kernel that read them would return NaN.

import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { float16BitsToFloat32, toFloat16Array } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { pagedAttentionReference } from '../../../kernels/paged-attention.js';
import { refTensor } from '../../../kernels/reference/tensor.js';
import {
  type ActivationType,
  type KernelArray,
  type KernelPoolArray,
  type KernelShape,
  type KernelType,
  loadPagedAttentionKernel,
  type PagedAttentionKernel,
} from '../../../src/runtime/paged-attention-kernel.js';
import { relativeError } from '../../support/onnx.js';
import { randomLayout, type RandomLayout, type SequenceShape } from '../../support/paged-layout.js';

let kernel: PagedAttentionKernel;
beforeAll(async () => {
  const availability = await loadPagedAttentionKernel();
  // These machines have a C compiler and Node's headers: a kernel that does not build is a failure here, not a skip.
  if ('unavailable' in availability) throw new Error(`native kernel unavailable: ${availability.unavailable}`);
  kernel = availability.kernel;
});

const asKernel = (values: Float32Array, type: ActivationType): KernelArray => (type === 'float32' ? values : toFloat16Array(values));
const asFloat32 = (values: KernelArray): Float32Array => (values instanceof Float32Array ? values : Float32Array.from(values, float16BitsToFloat32));

/**
 * Where element d of position r of (head, block) of an int8 pool and its scale sit, and how its
 * byte holds its code: each (head, block) is block_size × dim codes — V by rows of int8, K in
 * dimension quads ([dim / 4][block_size][4]) of code + 128 as an unsigned byte — then
 * block_size float32 scales.
 */
const int8Geometry = (numBlocks: number, blockSize: number, dim: number, kind: 'key' | 'value') => {
  const blockBytes = blockSize * (dim + 4);
  const block = (head: number, id: number) => (head * numBlocks + id) * blockBytes;
  return {
    size: (kvHeads: number) => kvHeads * numBlocks * blockBytes,
    element: (head: number, id: number, r: number, d: number) => block(head, id) + (kind === 'key' ? ((d >> 2) * blockSize + r) * 4 + (d & 3) : r * dim + d),
    scale: (head: number, id: number, r: number) => block(head, id) + blockSize * dim + 4 * r,
    // An Int8Array keeps a byte's value modulo 256, so the biased code is stored as it is.
    encode: (code: number) => (kind === 'key' ? code + 128 : code),
    decode: (byte: number) => (kind === 'key' ? (byte & 0xff) - 128 : byte),
  };
};

/** Round half to even, as C's lrintf does in the default rounding mode. */
const roundHalfEven = (x: number): number => {
  const floor = Math.floor(x);
  const fraction = x - floor;
  return fraction > 0.5 || (fraction === 0.5 && floor % 2 !== 0) ? floor + 1 : floor;
};

/**
 * Query rows as the kernel scores them against an int8 pool: each row of `dim` quantized as the
 * pool's rows are (int8, scale max |q| / 127, in float32 steps) and taken back to float.
 */
function quantizedQueries(q: Float32Array, dim: number): Float32Array {
  const out = new Float32Array(q.length);
  for (let from = 0; from < q.length; from += dim) {
    const row = q.subarray(from, from + dim);
    const largest = Math.max(...row.map(Math.abs));
    const inverse = largest > 0 ? Math.fround(127 / largest) : 0;
    const step = Math.fround(largest / 127);
    for (let d = 0; d < dim; d++) out[from + d] = Math.max(-127, Math.min(127, roundHalfEven(Math.fround(row[d]! * inverse)))) * step;
  }
  return out;
}

/** An int8 pool of random rows and scales, and the float32 [kv_heads, blocks, block_size, dim] values it stands for. */
function randomInt8Pool(random: SeededRandom, kind: 'key' | 'value', kvHeads: number, numBlocks: number, blockSize: number, dim: number): { pool: Int8Array; values: Float32Array } {
  const at = int8Geometry(numBlocks, blockSize, dim, kind);
  const pool = new Int8Array(at.size(kvHeads));
  const scales = new DataView(pool.buffer);
  const values = new Float32Array(kvHeads * numBlocks * blockSize * dim);
  for (let h = 0; h < kvHeads; h++) {
    for (let b = 0; b < numBlocks; b++) {
      for (let r = 0; r < blockSize; r++) {
        const scale = Math.fround((0.5 + random.next()) * (3 / 127));
        scales.setFloat32(at.scale(h, b, r), scale, true);
        for (let d = 0; d < dim; d++) {
          const q = (random.nextUint32() % 255) - 127;
          pool[at.element(h, b, r, d)] = at.encode(q);
          values[((h * numBlocks + b) * blockSize + r) * dim + d] = q * scale;
        }
      }
    }
  }
  return { pool, values };
}

/** The pool's float view and the arrays the kernel takes, random as `type` stores them. */
function randomPool(
  random: SeededRandom,
  kind: 'key' | 'value',
  type: KernelType,
  kvHeads: number,
  numBlocks: number,
  blockSize: number,
  dim: number,
  data: (count: number) => Float32Array,
): { pool: KernelPoolArray; values: Float32Array } {
  if (type === 'int8') return randomInt8Pool(random, kind, kvHeads, numBlocks, blockSize, dim);
  const pool = asKernel(data(kvHeads * numBlocks * blockSize * dim), type);
  return { pool, values: asFloat32(pool) };
}

/** The call's K or V rows ([tokens, kv_heads, dim]) as the kernel stored them in an int8 pool, dequantized. */
function storedRows(c: Case, layout: RandomLayout, pool: Int8Array, kind: 'key' | 'value'): Float32Array {
  const at = int8Geometry(layout.numBlocks, c.blockSize, c.dim, kind);
  const scales = new DataView(pool.buffer);
  const rows = new Float32Array(layout.numTokens * c.kvHeads * c.dim);
  c.sequences.forEach((sequence, s) => {
    for (let j = 0; j < sequence.query; j++) {
      const position = sequence.past + j;
      const [block, r] = [layout.blockTables[s]![Math.floor(position / c.blockSize)]!, position % c.blockSize];
      for (let h = 0; h < c.kvHeads; h++) {
        const scale = scales.getFloat32(at.scale(h, block, r), true);
        const to = ((layout.queryStarts[s]! + j) * c.kvHeads + h) * c.dim;
        for (let d = 0; d < c.dim; d++) rows[to + d] = at.decode(pool[at.element(h, block, r, d)]!) * scale;
      }
    }
  });
  return rows;
}

/** The largest error of a stored row against the row written, in units of that row's quantization step (max |x| / 127). */
function quantizationError(stored: Float32Array, fresh: Float32Array, dim: number): number {
  let worst = 0;
  for (let from = 0; from < fresh.length; from += dim) {
    const row = fresh.subarray(from, from + dim);
    const step = Math.max(...row.map(Math.abs)) / 127;
    for (let d = 0; d < dim; d++) {
      const error = Math.abs(stored[from + d]! - row[d]!);
      worst = Math.max(worst, step > 0 ? error / step : error);
    }
  }
  return worst;
}

interface Case {
  readonly heads: number;
  readonly kvHeads: number;
  readonly dim: number;
  readonly blockSize: number;
  readonly sequences: readonly SequenceShape[];
  readonly sharedPrefixBlocks: number;
  readonly activationType: ActivationType;
  readonly kvType: KernelType;
  readonly threads: number;
  readonly seed: number;
  /** The layer's sliding window (absent: full causal attention). */
  readonly slidingWindow?: number;
}

/** Block ids that no query of the call may read under the window: wholly before its sequence's first query's window, and no other sequence's to read. */
function outOfWindowBlocks(c: Case, layout: RandomLayout): number[] {
  if (c.slidingWindow === undefined) return [];
  const [outside, needed] = [new Set<number>(), new Set<number>()];
  c.sequences.forEach((sequence, s) => {
    const firstBlock = Math.floor(Math.max(0, sequence.past - c.slidingWindow! + 1) / c.blockSize);
    const blocks = Math.ceil((sequence.past + sequence.query) / c.blockSize);
    for (let b = 0; b < blocks; b++) (b < firstBlock ? outside : needed).add(layout.blockTables[s]![b]!);
  });
  return [...outside].filter((id) => !needed.has(id));
}

/** Every row of the blocks `ids` unreadable: NaN values (float pools) or NaN scales (int8). */
function poison(pool: KernelPoolArray, type: KernelType, c: Case, numBlocks: number, ids: readonly number[]): void {
  for (let h = 0; h < c.kvHeads; h++) {
    for (const id of ids) {
      if (type === 'int8') {
        const scales = new DataView(pool.buffer, pool.byteOffset);
        const at = int8Geometry(numBlocks, c.blockSize, c.dim, 'key');
        for (let r = 0; r < c.blockSize; r++) scales.setFloat32(at.scale(h, id, r), Number.NaN, true);
      } else {
        const from = (h * numBlocks + id) * c.blockSize * c.dim;
        (pool as Float32Array | Uint16Array).fill(type === 'float32' ? Number.NaN : 0x7e00, from, from + c.blockSize * c.dim);
      }
    }
  }
}

/** The kernel's output and the reference's, on the same random data and layout. */
function run(c: Case): { error: number; layout: RandomLayout; writeError: number; out: Float32Array } {
  const random = new SeededRandom(c.seed);
  // One spare column past the longest table and room for the new tokens' blocks, which randomLayout does not own.
  const withNew = c.sequences.map((s) => ({ past: s.past + s.query, query: s.query }));
  const layout = randomLayout(random, c.blockSize, withNew, { sharedPrefixBlocks: c.sharedPrefixBlocks });
  const n = layout.numTokens;
  const data = (count: number): Float32Array => random.uniformWithStd(count, 1.5);
  // Values as the kernel's element type sees them, so float16 rounding of the inputs is not counted as error.
  const rounded = (values: Float32Array, type: ActivationType) => asFloat32(asKernel(values, type));
  const q = rounded(data(n * c.heads * c.dim), c.activationType);
  const [k, v] = [rounded(data(n * c.kvHeads * c.dim), c.activationType), rounded(data(n * c.kvHeads * c.dim), c.activationType)];
  const [keys, values] = (['key', 'value'] as const).map((kind) => randomPool(random, kind, c.kvType, c.kvHeads, layout.numBlocks, c.blockSize, c.dim, data)) as [
    ReturnType<typeof randomPool>,
    ReturnType<typeof randomPool>,
  ];
  const [keyPool, valuePool] = [keys.pool, values.pool];
  const pasts = c.sequences.map((s) => s.past);
  const poolDims = [c.kvHeads, layout.numBlocks, c.blockSize, c.dim];
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
    ...(c.slidingWindow === undefined ? {} : { slidingWindow: c.slidingWindow }),
  };
  const kernelLayout = {
    blockTables: Int32Array.from(layout.blockTables.flat()),
    queryStarts: Int32Array.from(layout.queryStarts),
    queryLengths: Int32Array.from(layout.queryLengths),
    pastLengths: Int32Array.from(pasts),
  };
  kernel.write(shape, kernelLayout, asKernel(k, c.activationType), asKernel(v, c.activationType), keyPool, valuePool);
  // An int8 pool holds the call's rows quantized: the write is checked against the rows (half a
  // step at most), and attention against the reference over the rows as stored, so what reading
  // the pool adds is measured on its own, to float32 rounding.
  const stored = keyPool instanceof Int8Array && valuePool instanceof Int8Array ? { k: storedRows(c, layout, keyPool, 'key'), v: storedRows(c, layout, valuePool, 'value') } : { k, v };
  const writeError = Math.max(quantizationError(stored.k, k, c.dim), quantizationError(stored.v, v, c.dim));
  // The reference sees the pool as it was (the past) and the call's own K/V apart.
  // Against an int8 pool the kernel scores with its query rows quantized the same way.
  const expected = pagedAttentionReference(
    refTensor([n, c.heads, c.dim], c.kvType === 'int8' ? quantizedQueries(q, c.dim) : q),
    refTensor([n, c.kvHeads, c.dim], stored.k),
    refTensor([n, c.kvHeads, c.dim], stored.v),
    refTensor(poolDims, keys.values),
    refTensor(poolDims, values.values),
    { ...layout, pastLengths: pasts, ...(c.slidingWindow === undefined ? {} : { slidingWindow: c.slidingWindow }) },
  );
  const unread = outOfWindowBlocks(c, layout);
  for (const pool of [keyPool, valuePool]) poison(pool, c.kvType, c, layout.numBlocks, unread);
  const out = c.activationType === 'float32' ? new Float32Array(n * c.heads * c.dim) : new Uint16Array(n * c.heads * c.dim);
  kernel.attend(shape, kernelLayout, asKernel(q, c.activationType), keyPool, valuePool, out, c.threads);
  return { error: relativeError(asFloat32(out), expected.data), layout, writeError, out: asFloat32(out) };
}

// float16 K/V in the pool round the written rows; float16 outputs round the result (2^-11
// relative). An int8 pool's rows are compared as stored (writeError checks the quantization).
const tolerance = (c: Case) => (c.activationType === 'float16' || c.kvType === 'float16' ? 3e-3 : 1e-5);

const headShapes = fc.constantFrom<readonly [number, number, number]>([4, 2, 8], [8, 2, 64], [4, 4, 8], [8, 1, 16], [16, 2, 128], [6, 2, 8], [4, 2, 32], [2, 1, 256]);
const caseArbitrary = fc
  .record({
    heads: headShapes,
    blockSize: fc.constantFrom(1, 2, 3, 4, 16, 32),
    sequences: fc.array(fc.record({ past: fc.integer({ min: 0, max: 60 }), query: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 20 })) }), { minLength: 1, maxLength: 5 }),
    share: fc.boolean(),
    activationType: fc.constantFrom<ActivationType>('float32', 'float16'),
    kvType: fc.constantFrom<KernelType>('float32', 'float16', 'int8'),
    threads: fc.constantFrom(1, 2, 3),
    seed: fc.integer({ min: 1, max: 2 ** 30 }),
    window: fc.option(fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 90 })), { nil: undefined }),
  })
  .map(({ heads: [heads, kvHeads, dim], share, window, ...rest }): Case => {
    const shareable = rest.sequences.length >= 2 ? Math.floor(Math.min(rest.sequences[0]!.past, rest.sequences[1]!.past) / rest.blockSize) : 0;
    return { heads, kvHeads, dim, sharedPrefixBlocks: share ? shareable : 0, ...rest, ...(window === undefined ? {} : { slidingWindow: window }) };
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
        const { error, writeError } = run(c);
        expect(error, JSON.stringify(c)).toBeLessThan(tolerance(c));
        // Half a step, and float32 rounding of the scale and the product.
        expect(writeError, JSON.stringify(c)).toBeLessThanOrEqual(0.5 + 1e-4);
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

  it('an int8 pool: a long prefill chunk and decode rows at the served shape, float32 and float16 activations', () => {
    for (const activationType of ['float32', 'float16'] as const) {
      const c: Case = {
        heads: 8,
        kvHeads: 2,
        dim: 64,
        blockSize: 16,
        sequences: [{ past: 700, query: 37 }, ...Array.from({ length: 6 }, (_, i) => ({ past: 250 + 17 * i, query: 1 }))],
        sharedPrefixBlocks: 0,
        activationType,
        kvType: 'int8',
        threads: 2,
        seed: 23,
      };
      const { error, writeError } = run(c);
      expect(error).toBeLessThan(activationType === 'float32' ? 1e-5 : 3e-3);
      expect(writeError).toBeLessThanOrEqual(0.5 + 1e-4);
    }
  });

  describe('sliding window', () => {
    const windowed = (overrides: Partial<Case>): Case => ({
      heads: 8,
      kvHeads: 2,
      dim: 64,
      blockSize: 16,
      // A prefill longer than the window, decode rows whose past is longer, a chunk over a past: one flat batch.
      sequences: [
        { past: 0, query: 70 },
        { past: 300, query: 1 },
        { past: 45, query: 1 },
        { past: 130, query: 19 },
        { past: 3, query: 1 },
      ],
      sharedPrefixBlocks: 0,
      activationType: 'float32',
      kvType: 'float32',
      threads: 2,
      seed: 31,
      slidingWindow: 40,
      ...overrides,
    });
    const cases = [...(['float32', 'float16', 'int8'] as const).flatMap((kvType) => (['float32', 'float16'] as const).map((activationType) => ({ kvType, activationType })))];
    it.each(cases)('equals the reference with the window, out-of-window blocks unread: $kvType pool, $activationType activations (AVX-512 and generic head sizes)', ({ kvType, activationType }) => {
      for (const [heads, kvHeads, dim] of [
        [8, 2, 64],
        [4, 2, 8],
      ] as const) {
        const c = windowed({ kvType, activationType, heads, kvHeads, dim });
        const { error, writeError } = run(c);
        expect(error, JSON.stringify({ kvType, activationType, dim })).toBeLessThan(tolerance(c));
        expect(writeError).toBeLessThanOrEqual(0.5 + 1e-4);
        // The window mattered (the same call without it differs), and whole blocks were left unread.
        expect(relativeError(run(c).out, Float64Array.from(run({ ...c, slidingWindow: undefined }).out))).toBeGreaterThan(1e-2);
        expect(outOfWindowBlocks(c, run(c).layout).length).toBeGreaterThan(0);
      }
    });
    it('window 1: each query sees only itself, blocks of size 1 and 4', () => {
      for (const blockSize of [1, 4]) {
        for (const kvType of ['float32', 'int8'] as const) {
          const c = windowed({
            slidingWindow: 1,
            blockSize,
            kvType,
            sequences: [
              { past: 9, query: 5 },
              { past: 0, query: 3 },
              { past: 17, query: 1 },
            ],
          });
          expect(run(c).error, JSON.stringify({ blockSize, kvType })).toBeLessThan(tolerance(c));
        }
      }
    });
    it('a window at least the context is full causal attention', () => {
      const c = windowed({ slidingWindow: 400 });
      const full = { ...c, slidingWindow: undefined };
      expect(run(c).error).toBeLessThan(1e-5);
      expect(relativeError(run(c).out, Float64Array.from(run(full).out))).toBe(0);
    });
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
    // An int8 pool is an Int8Array with room for each row's scale too.
    expect(() => kernel.attend({ ...shape, kvType: 'int8' }, layout(Int32Array.of(0, 1), 1, 1), new Float32Array(8), keyPool, valuePool, new Float32Array(8), 1)).toThrow(/pool/);
    expect(() => kernel.write({ ...shape, kvType: 'int8' }, layout(Int32Array.of(0, 1), 1, 1), fresh, fresh, new Int8Array(2 * 2 * 4), new Int8Array(2 * 2 * 4))).toThrow(/scale/);
    expect(() => kernel.attend({ ...shape, numHeads: 3, numKvHeads: 2 }, layout(Int32Array.of(0, 1), 1, 1), new Float32Array(8), keyPool, valuePool, new Float32Array(8), 1)).toThrow(/multiple/);
    // An int8 pool's K codes sit in quads of dimensions: a head size of 6 is refused, not read past its rows.
    const int8Pool = () => new Int8Array(2 * 2 * (6 + 4));
    expect(() => kernel.write({ ...shape, headDim: 6, kvType: 'int8' }, layout(Int32Array.of(0, 1), 1, 1), new Float32Array(6), new Float32Array(6), int8Pool(), int8Pool())).toThrow(/multiple of 4/);
    expect([...keyPool, ...valuePool].every((x) => x === 7)).toBe(true);
  });
});
