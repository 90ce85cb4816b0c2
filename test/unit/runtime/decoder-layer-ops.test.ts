// The native decoder layer ops (src/runtime/native/decoder-ops.h) against float64 references: the
// packed linear at every row count around its 8-row register block and every width around its
// 64-column panel, on one and several threads (the kept pool, called many times over); RMSNorm
// with and without the residual add; RoPE, whole and partial, against kernels/rotary-embedding's
// reference rule; the gated activations. Wrong arguments throw and write nothing.

import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { type DecoderLayerOps, loadPagedAttentionKernel } from '../../../src/runtime/paged-attention-kernel.js';

let ops: DecoderLayerOps;
beforeAll(async () => {
  const availability = await loadPagedAttentionKernel();
  // These machines have a C compiler and Node's headers: a kernel that does not build is a failure here, not a skip.
  if ('unavailable' in availability) throw new Error(`native kernel unavailable: ${availability.unavailable}`);
  ops = availability.kernel.layerOps;
});

const randomArray = (random: SeededRandom, length: number): Float32Array => Float32Array.from({ length }, () => 2 * random.next() - 1);

function expectClose(actual: Float32Array, expected: ArrayLike<number>, tolerance: number): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const scale = Math.max(1, Math.abs(expected[i]!));
    if (!(Math.abs(actual[i]! - expected[i]!) <= tolerance * scale)) throw new Error(`element ${i}: ${actual[i]} against ${expected[i]}`);
  }
}

function linearReference(x: Float32Array, w: Float32Array, rows: number, inFeatures: number, outFeatures: number): Float64Array {
  const y = new Float64Array(rows * outFeatures);
  for (let r = 0; r < rows; r++) for (let k = 0; k < inFeatures; k++) for (let n = 0; n < outFeatures; n++) y[r * outFeatures + n]! += x[r * inFeatures + k]! * w[k * outFeatures + n]!;
  return y;
}

describe('packed linear', () => {
  it('equals the float64 product at every row count, width and thread count', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 19 }),
        fc.integer({ min: 1, max: 150 }),
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer(),
        (rows, inFeatures, outFeatures, threads, seed) => {
          const random = new SeededRandom(seed);
          const [w, x] = [randomArray(random, inFeatures * outFeatures), randomArray(random, rows * inFeatures)];
          const packed = ops.packLinear(w, inFeatures, outFeatures);
          // A guard past the output: nothing may be written beyond rows × out.
          const y = new Float32Array(rows * outFeatures + 1).fill(7);
          ops.linear(packed, x, rows, y, threads);
          expectClose(y.subarray(0, rows * outFeatures), linearReference(x, w, rows, inFeatures, outFeatures), 1e-4 * Math.sqrt(inFeatures));
          expect(y[rows * outFeatures]).toBe(7);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('packs a transposed table ([out, in], an lm_head) to the same product as its transpose, bit for bit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 90 }), fc.integer({ min: 1, max: 200 }), fc.integer(), (rows, inFeatures, outFeatures, seed) => {
        const random = new SeededRandom(seed);
        const [w, x] = [randomArray(random, inFeatures * outFeatures), randomArray(random, rows * inFeatures)];
        const table = new Float32Array(outFeatures * inFeatures);
        for (let k = 0; k < inFeatures; k++) for (let n = 0; n < outFeatures; n++) table[n * inFeatures + k] = w[k * outFeatures + n]!;
        const [direct, transposed] = [new Float32Array(rows * outFeatures), new Float32Array(rows * outFeatures)];
        ops.linear(ops.packLinear(w, inFeatures, outFeatures), x, rows, direct, 2);
        ops.linear(ops.packLinear(table, inFeatures, outFeatures, true), x, rows, transposed, 2);
        expect(transposed).toEqual(direct);
      }),
      { numRuns: 60 },
    );
  });

  it("gathers a transposed-packed table's rows (a tied embedding's lookup) and refuses ids outside it, writing nothing", () => {
    const [vocab, hidden] = [130, 7];
    const table = randomArray(new SeededRandom(5), vocab * hidden);
    const packed = ops.packLinear(table, hidden, vocab, true);
    const ids = BigInt64Array.of(0n, 63n, 64n, 129n, 5n);
    const out = new Float32Array(ids.length * hidden);
    ops.gatherColumns(packed, ids, out);
    ids.forEach((id, t) => expect(out.subarray(t * hidden, (t + 1) * hidden)).toEqual(table.subarray(Number(id) * hidden, (Number(id) + 1) * hidden)));
    const untouched = new Float32Array(2 * hidden).fill(3);
    expect(() => ops.gatherColumns(packed, BigInt64Array.of(1n, 130n), untouched)).toThrow(/ids must be columns/);
    expect(() => ops.gatherColumns(packed, BigInt64Array.of(1n, -1n), untouched)).toThrow(/ids must be columns/);
    expect(() => ops.gatherColumns(packed, BigInt64Array.of(1n, 2n), new Float32Array(hidden))).toThrow(/out must be a Float32Array of at least 14/);
    expect([...untouched]).toEqual(new Array(2 * hidden).fill(3));
  });

  it('refuses arrays shorter than the shapes and writes nothing', () => {
    const packed = ops.packLinear(new Float32Array(6), 2, 3);
    const y = new Float32Array(6).fill(1);
    expect(() => ops.linear(packed, new Float32Array(3), 2, y, 1)).toThrow(/x must be a Float32Array of at least 4/);
    expect(() => ops.linear(packed, new Float32Array(4), 2, new Float32Array(5), 1)).toThrow(/y must be/);
    expect(() => ops.linear({ inFeatures: 2, outFeatures: 3, handle: {} }, new Float32Array(4), 2, y, 1)).toThrow(/packLinear's value/);
    expect(() => ops.packLinear(new Float32Array(5), 2, 3)).toThrow(/weight must be a Float32Array of at least 6/);
    expect([...y]).toEqual([1, 1, 1, 1, 1, 1]);
  });
});

function rmsNormReference(x: ArrayLike<number>, rows: number, width: number, weight: Float32Array, eps: number): Float64Array {
  const out = new Float64Array(rows * width);
  for (let r = 0; r < rows; r++) {
    let sum = 0;
    for (let i = 0; i < width; i++) sum += x[r * width + i]! ** 2;
    const scale = 1 / Math.sqrt(sum / width + eps);
    for (let i = 0; i < width; i++) out[r * width + i] = x[r * width + i]! * scale * weight[i]!;
  }
  return out;
}

describe('RMSNorm', () => {
  it('normalizes each row, with and without the residual add', () => {
    const random = new SeededRandom(3);
    const [rows, width, eps] = [5, 96, 1e-6];
    const [x, update, weight] = [randomArray(random, rows * width), randomArray(random, rows * width), randomArray(random, width)];
    const out = new Float32Array(rows * width);
    ops.rmsNorm(x, rows, width, weight, eps, out);
    expectClose(out, rmsNormReference(x, rows, width, weight, eps), 1e-5);
    const [sum, normed] = [new Float32Array(rows * width), new Float32Array(rows * width)];
    ops.addRmsNorm(x, update, rows, width, weight, eps, sum, normed);
    const expectedSum = Float64Array.from(x, (v, i) => v + update[i]!);
    expectClose(sum, expectedSum, 1e-6);
    expectClose(normed, rmsNormReference(expectedSum, rows, width, weight, eps), 1e-5);
  });
});

describe('RoPE', () => {
  it('rotates the rotate-half pairs by the float32 angle, whole and partial heads, times the factor', () => {
    const random = new SeededRandom(5);
    const [tokens, heads, dim] = [3, 2, 16];
    const positions = BigInt64Array.of(0n, 7n, 4095n);
    for (const [half, factor] of [
      [8, 1],
      [4, 1.25],
    ] as const) {
      const inverse = Float32Array.from({ length: half }, (_, i) => 1 / 10_000 ** ((2 * i) / (2 * half)));
      const x = randomArray(random, tokens * heads * dim);
      const expected = Float64Array.from(x);
      for (let t = 0; t < tokens; t++) {
        for (let h = 0; h < heads; h++) {
          const base = (t * heads + h) * dim;
          for (let i = 0; i < half; i++) {
            const angle = Math.fround(Math.fround(Number(positions[t])) * inverse[i]!);
            const [c, s] = [Math.cos(angle) * factor, Math.sin(angle) * factor];
            const [a, b] = [x[base + i]!, x[base + i + half]!];
            expected[base + i] = a * c - b * s;
            expected[base + i + half] = b * c + a * s;
          }
        }
      }
      ops.rope(x, tokens, heads, dim, positions, inverse, factor);
      expectClose(x, expected, 1e-5);
    }
  });

  it('refuses more frequencies than half a head', () => {
    expect(() => ops.rope(new Float32Array(8), 1, 1, 8, BigInt64Array.of(0n), new Float32Array(5), 1)).toThrow(/1 \.\. dim \/ 2/);
  });
});

describe('gated activations', () => {
  it('computes silu(g)·u and GELU-tanh(g)·u', () => {
    const random = new SeededRandom(9);
    const [gate, up] = [randomArray(random, 40), randomArray(random, 40)];
    const silu = Float64Array.from(gate, (g, i) => (g / (1 + Math.exp(-g))) * up[i]!);
    const gelu = Float64Array.from(gate, (g, i) => 0.5 * g * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (g + 0.044715 * g ** 3))) * up[i]!);
    const [a, b] = [Float32Array.from(gate), Float32Array.from(gate)];
    ops.gatedActivation(a, up, 40, 'silu');
    ops.gatedActivation(b, up, 40, 'gelu_tanh');
    expectClose(a, silu, 1e-5);
    expectClose(b, gelu, 1e-5);
  });
});
