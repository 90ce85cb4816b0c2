// The one seam to the native paged-attention kernel (src/runtime/native/paged-attention.c, with the
// decoder layer ops of decoder-ops.h): loads the addon built at install
// (src/runtime/native/build.mjs), building it on first use where the install skipped that, and
// types its calls. Where it cannot be had (no C compiler or Node headers, another platform,
// CONVEYOR_NATIVE_ATTENTION=0) callers get the reason and keep the paged graph's ONNX attention.

import { createRequire } from 'node:module';

/**
 * Element types of the kernel's arrays: float32 (Float32Array), float16 (its bits in a
 * Uint16Array), and for the pool also int8 (an Int8Array whose every (kv head, block) is
 * block_size × head_dim codes — V by rows of int8, K in dimension quads, [head_dim / 4][block_size][4],
 * of code + 128 as unsigned bytes — then the positions' block_size float32 scales; write()
 * quantizes; the head size is a multiple of 4). Against an int8 pool the kernel quantizes each
 * query row the same way (int8, one scale a row) and scores with those codes.
 */
export const KERNEL_TYPES = { float32: 0, float16: 1, int8: 2 } as const;
export type KernelType = keyof typeof KERNEL_TYPES;
export type ActivationType = Exclude<KernelType, 'int8'>;
export type KernelArray = Float32Array | Uint16Array;
export type KernelPoolArray = KernelArray | Int8Array;

export interface KernelShape {
  readonly numSeqs: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly numBlocks: number;
  readonly blockSize: number;
  /** Columns of the block-table rows. */
  readonly maxBlocks: number;
  /** Query, output and fresh K/V. */
  readonly activationType: ActivationType;
  readonly kvType: KernelType;
  /** A sliding-window layer's window: query position i sees pool positions i − window + 1 .. i, and blocks wholly before them are not read. 0 or absent: full causal attention. */
  readonly slidingWindow?: number;
}

/** A flat batch's layout (kernels/paged-attention.ts): per sequence, its rows of the flat batch, cached positions and blocks. */
export interface KernelLayout {
  /** [numSeqs, maxBlocks]; row s lists sequence s's blocks, enough for past + length positions. */
  readonly blockTables: Int32Array;
  readonly queryStarts: Int32Array;
  readonly queryLengths: Int32Array;
  /** Positions already in the pool before this call's tokens. */
  readonly pastLengths: Int32Array;
}

export interface PagedAttentionKernel {
  /** Writes the call's new K/V ([tokens, kvHeads, headDim]) at positions past .. past + length − 1 of each sequence's blocks. */
  write(shape: KernelShape, layout: KernelLayout, freshKey: KernelArray, freshValue: KernelArray, keyPool: KernelPoolArray, valuePool: KernelPoolArray): void;
  /** out[n] = attention of query[n] ([tokens, heads, headDim]) over its sequence's pool positions 0 .. past + j (written first; with shape.slidingWindow, only the window's). */
  attend(shape: KernelShape, layout: KernelLayout, query: KernelArray, keyPool: KernelPoolArray, valuePool: KernelPoolArray, out: KernelArray, threads: number): void;
  /** Asks for huge pages behind a pool not yet written (Linux; fewer TLB misses on blocks read anywhere in it). Whether the advice was taken. */
  adviseHugePages(pool: KernelPoolArray): boolean;
  /** The dense decoder layer's operations at a few rows, float32 (src/runners/native-layers.ts). */
  readonly layerOps: DecoderLayerOps;
}

/** A linear's weight packed once into the kernel's column panels (its memory is the kernel's, freed with the value). */
export interface PackedLinear {
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly handle: unknown;
}

/** The gated MLP's activations the kernel computes: SwiGLU's and GeGLU's (GELU, tanh approximation). */
export const GATED_ACTIVATIONS = { silu: 0, gelu_tanh: 1 } as const;
export type GatedActivation = keyof typeof GATED_ACTIVATIONS;

export interface DecoderLayerOps {
  /** Packs a [inFeatures, outFeatures] row-major weight (ONNX MatMul's B), or with `transposed` its [outFeatures, inFeatures] transpose (a Gemm's B with transB: an lm_head's table). */
  packLinear(weight: Float32Array, inFeatures: number, outFeatures: number, transposed?: boolean): PackedLinear;
  /** out[t, :] = column ids[t] of the weight ([inFeatures] values each): a tied embedding's rows, from the lm_head packed from its table (transposed). */
  gatherColumns(weight: PackedLinear, ids: BigInt64Array, out: Float32Array): void;
  /** y[rows, out] = x[rows, in] · weight on up to `threads` threads (kept between calls). */
  linear(weight: PackedLinear, x: Float32Array, rows: number, y: Float32Array, threads: number): void;
  /** out = x / √(mean(x²) + eps) · weight, per row of `width`. */
  rmsNorm(x: Float32Array, rows: number, width: number, weight: Float32Array, eps: number, out: Float32Array): void;
  /** sum = residual + update; normed = rmsNorm(sum). */
  addRmsNorm(residual: Float32Array, update: Float32Array, rows: number, width: number, weight: Float32Array, eps: number, sum: Float32Array, normed: Float32Array): void;
  /** RoPE in place on x [tokens, heads, dim] (rotate-half pairs over the first 2 · inverseFrequencies.length dimensions; cos and sin times factor). */
  rope(x: Float32Array, tokens: number, heads: number, dim: number, positions: BigInt64Array, inverseFrequencies: Float32Array, factor: number): void;
  /** gate = activation(gate) · up over the first `count` elements. */
  gatedActivation(gate: Float32Array, up: Float32Array, count: number, activation: GatedActivation): void;
}

interface Addon {
  write(shape: Int32Array, ...rest: unknown[]): void;
  attend(shape: Int32Array, ...rest: unknown[]): void;
  adviseHugePages(pool: KernelPoolArray): boolean;
  packLinear(weight: Float32Array, inFeatures: number, outFeatures: number, transposed: boolean): unknown;
  linear(handle: unknown, x: Float32Array, rows: number, y: Float32Array, threads: number): void;
  gatherColumns(handle: unknown, ids: BigInt64Array, out: Float32Array): void;
  rmsNorm: DecoderLayerOps['rmsNorm'];
  addRmsNorm: DecoderLayerOps['addRmsNorm'];
  rope: DecoderLayerOps['rope'];
  gatedActivation(gate: Float32Array, up: Float32Array, count: number, kind: number): void;
}

export type KernelAvailability = { readonly kernel: PagedAttentionKernel } | { readonly unavailable: string };

let loaded: Promise<KernelAvailability> | undefined;

/** The kernel, loaded (and if need be built) once per thread. */
export function loadPagedAttentionKernel(): Promise<KernelAvailability> {
  loaded ??= load();
  return loaded;
}

async function load(): Promise<KernelAvailability> {
  if (process.env['CONVEYOR_NATIVE_ATTENTION'] === '0') return { unavailable: 'CONVEYOR_NATIVE_ATTENTION=0' };
  if (process.platform === 'win32') return { unavailable: `no native kernel build for ${process.platform}` };
  try {
    const { buildKernel } = await import('./native/build.mjs');
    const addon = createRequire(import.meta.url)(buildKernel()) as Addon;
    return { kernel: wrap(addon) };
  } catch (error) {
    return { unavailable: error instanceof Error ? error.message : String(error) };
  }
}

function wrap(addon: Addon): PagedAttentionKernel {
  const shapeArray = (s: KernelShape) =>
    Int32Array.of(s.numSeqs, s.numHeads, s.numKvHeads, s.headDim, s.numBlocks, s.blockSize, s.maxBlocks, KERNEL_TYPES[s.activationType], KERNEL_TYPES[s.kvType], s.slidingWindow ?? 0);
  const layoutArgs = (l: KernelLayout) => [l.blockTables, l.queryStarts, l.queryLengths, l.pastLengths];
  return {
    write: (shape, layout, freshKey, freshValue, keyPool, valuePool) => addon.write(shapeArray(shape), ...layoutArgs(layout), freshKey, freshValue, keyPool, valuePool),
    attend: (shape, layout, query, keyPool, valuePool, out, threads) => addon.attend(shapeArray(shape), ...layoutArgs(layout), query, keyPool, valuePool, out, threads),
    adviseHugePages: (pool) => addon.adviseHugePages(pool),
    layerOps: {
      packLinear: (weight, inFeatures, outFeatures, transposed = false) => ({ inFeatures, outFeatures, handle: addon.packLinear(weight, inFeatures, outFeatures, transposed) }),
      linear: (weight, x, rows, y, threads) => addon.linear(weight.handle, x, rows, y, threads),
      gatherColumns: (weight, ids, out) => addon.gatherColumns(weight.handle, ids, out),
      rmsNorm: (...args) => addon.rmsNorm(...args),
      addRmsNorm: (...args) => addon.addRmsNorm(...args),
      rope: (...args) => addon.rope(...args),
      gatedActivation: (gate, up, count, activation) => addon.gatedActivation(gate, up, count, GATED_ACTIVATIONS[activation]),
    },
  };
}
