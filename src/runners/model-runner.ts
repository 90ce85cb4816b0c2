// The seam between the engine loop and a model (vLLM v1's SchedulerOutput → ModelRunnerOutput):
// the scheduler decides a StepPlan, the runner executes it and hands back one logits row per
// request that samples, the sampler and scheduler do the rest. The engine sees only this
// interface; which adapter sits behind it is chosen from the model's inputs (create-runner.ts),
// so a runner that consumes the block pool directly (a paged-attention graph) plugs in beside
// PastKeyValuesRunner without the engine changing.

import type { EngineWorkerData, KvElementType, RunnerKind } from '../contracts/engine-messages.js';
import type { StepPlan } from '../contracts/generate.js';
import type { Device } from '../contracts/worker-messages.js';
import { type KvCacheLayout, numBlocksForBudget } from '../kv-cache/budget.js';
import type { KernelPoolArray } from '../runtime/paged-attention-kernel.js';

/** What opening a runner takes: the session settings, the KV budget, and the test-only fault. */
export type RunnerOptions = Pick<EngineWorkerData, 'modelPath' | 'device' | 'intraOpNumThreads' | 'intraOpSpinning' | 'kvCacheBytes' | 'kvCacheDtype' | 'blockSize' | 'faultInjection'> & {
  /** Exactly this many KV blocks instead of what kvCacheBytes holds (a draft model's pool, sized in positions from its target's). */
  readonly kvCacheBlocks?: number;
};

export type { RunnerKind } from '../contracts/engine-messages.js';

/** The model facts the engine needs: KV layout for the ready message and sizing, vocab for the sampler. */
export interface ModelShape {
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  /** Length of a logits row. */
  readonly vocabSize: number;
  /** Element type of the runner's KV storage (fp16 models keep fp16 KV; kv_cache_dtype may choose another for the native paged runner). */
  readonly kvType: KvElementType;
}

/** A pool array of each KV element type (int8: its values' bytes and float32 scales in one array): the kernel seam's. */
export type KvPoolArray = KernelPoolArray;

/**
 * How each KV element type is stored, for the budget and the pools alike: bytes per element, the
 * scale bytes each row (one position of one kv head) carries beside them, and the array. The
 * native kernel (src/runtime/native/paged-attention.c) lays an int8 block out as its rows then
 * their scales, which is what these sizes add up to.
 */
export const KV_STORAGE: Readonly<Record<KvElementType, { readonly elementBytes: number; readonly rowScaleBytes: number; readonly array: (length: number) => KvPoolArray }>> = {
  float32: { elementBytes: 4, rowScaleBytes: 0, array: (length) => new Float32Array(length) },
  float16: { elementBytes: 2, rowScaleBytes: 0, array: (length) => new Uint16Array(length) },
  int8: { elementBytes: 1, rowScaleBytes: 4, array: (length) => new Int8Array(length) },
};

/** Fixed when the runner is opened. */
export interface RunnerInfo {
  readonly kind: RunnerKind;
  readonly shape: ModelShape;
  /**
   * Blocks the runner's KV storage holds, sized from the memory budget: the KV cache manager
   * plans with exactly these, so every block id in a plan exists.
   */
  readonly numBlocks: number;
  /** Tokens per block. */
  readonly blockSize: number;
  /** Where the model runs (CUDA may have fallen back to CPU; `note` then says why). */
  readonly device: Device;
  readonly note?: string;
}

/**
 * The logits of each request whose ScheduledRequest has `sample: true`: float32, vocabSize long.
 * A request with `allLogits: true` gets tokenIds.length rows instead, and one with numDraftTokens
 * n the last n + 1 positions' (row-major, one per position, the last the sampled one);
 * lastLogitsRow() picks the row to sample.
 */
export type StepLogits = ReadonlyMap<string, Float32Array>;

/**
 * The greedy tokens of each request whose ScheduledRequest has `sample: true`
 * (ModelRunner.executeGreedy): one per logits row it gets — the sampled position's, or with
 * numDraftTokens n the last n + 1 positions' in order — the last being the row's next token.
 */
export type StepGreedyTokens = ReadonlyMap<string, readonly number[]>;

/** The last position's row of a StepLogits entry. */
export function lastLogitsRow(logits: Float32Array, vocabSize: number): Float32Array {
  return logits.length === vocabSize ? logits : logits.subarray(logits.length - vocabSize);
}

/**
 * Where a runner's time goes, ms, by phase of a model call: moving past K/V from the block pool
 * into model tensors, building the token feeds (ids, mask, positions: the padding), the model
 * call itself, writing present K/V back into the blocks, and extracting the sampled logits rows.
 */
export interface StepBreakdown {
  gatherMs: number;
  feedsMs: number;
  ortMs: number;
  scatterMs: number;
  /** Attention computed outside the model call (the native kernel between segments); 0 where the graph computes it. */
  attentionMs: number;
  /** Decoder layers computed outside the model calls (the native layer ops on a step of a few rows); 0 otherwise. */
  layersMs: number;
  logitsMs: number;
  /** Past positions copied out of the block pool (padding included): the gather's volume. */
  gatheredPositions: number;
}

/** The breakdown's phases in ms summed (every field but gatheredPositions): the runner's share of the wall. */
export function runnerPhasesMs(b: StepBreakdown): number {
  return b.gatherMs + b.feedsMs + b.ortMs + b.scatterMs + b.attentionMs + b.layersMs + b.logitsMs;
}

export function emptyBreakdown(): StepBreakdown {
  return { gatherMs: 0, feedsMs: 0, ortMs: 0, scatterMs: 0, attentionMs: 0, layersMs: 0, logitsMs: 0, gatheredPositions: 0 };
}

/** Counters for profiling the step; a runner reports 0 for a cost it does not have. */
export interface RunnerStats {
  /** Model calls in the last step (a plan may be split by shape). */
  lastStepCalls: number;
  /** Time spent copying KV between the block pool and model tensors in the last step, ms. */
  lastStepCopyMs: number;
  /** Calls that reused the previous call's output as their past KV (no copy), since start. */
  reusedPastCalls: number;
  /** The last step's time by phase. */
  readonly lastStep: StepBreakdown;
  /** Every step's time by phase, summed since start (a whole workload's breakdown is a difference of two). */
  readonly total: StepBreakdown;
}

export interface ModelRunner {
  readonly info: RunnerInfo;
  readonly stats: Readonly<RunnerStats>;
  /**
   * Runs every row of the plan (copying `blocksToCopy` first) and writes the rows' new KV into
   * their blocks. A row's logits are the sampler's to overwrite. Rejects only when the model
   * call fails; the engine treats that as fatal.
   */
  execute(plan: StepPlan): Promise<StepLogits>;
  /**
   * Present where the model has a greedy head (greedy-head.ts): runs the plan as execute() does
   * but returns each sampled row's greedy token, the argmax of its logits over ids below
   * `sampleableVocab`, and the logits never leave the model. For a step whose every sampled row
   * is plain greedy (Sampler.takesArgmax) and which wants no prompt-position logits (`allLogits`).
   */
  executeGreedy?(plan: StepPlan, sampleableVocab: number): Promise<StepGreedyTokens>;
  /** Frees the session and the KV storage; the runner is unusable afterwards. */
  release(): Promise<void>;
}

/** The KV memory a runner is opened with. */
export interface KvBudget {
  readonly kvCacheBytes: number;
  readonly blockSize: number;
  /** Exactly this many blocks, whatever kvCacheBytes holds (RunnerOptions.kvCacheBlocks). */
  readonly kvCacheBlocks?: number | undefined;
}

/** How many blocks of this model's KV the budget holds, in the runner's KV element type. */
export function blocksForBudget(shape: ModelShape, budget: KvBudget): number {
  if (budget.kvCacheBlocks !== undefined) return budget.kvCacheBlocks;
  return numBlocksForBudget(budget.kvCacheBytes, kvBlockLayout(shape, budget.blockSize));
}

/** What one block of this model's KV costs, for budget.ts (the pool's bytes: blocks × bytesPerBlock of it). */
export function kvBlockLayout(shape: ModelShape, blockSize: number): KvCacheLayout {
  const { numLayers, numKvHeads, headDim, kvType } = shape;
  const { elementBytes, rowScaleBytes } = KV_STORAGE[kvType];
  return { numLayers, numKvHeads, headDim, elementBytes, rowScaleBytes, blockSize };
}

/** A runner's fixed facts, as every adapter reports them. */
export function runnerInfo(kind: RunnerKind, shape: ModelShape, storage: { numBlocks: number; blockSize: number }, session: { device: Device; note?: string | undefined }): RunnerInfo {
  return { kind, shape, numBlocks: storage.numBlocks, blockSize: storage.blockSize, device: session.device, ...(session.note ? { note: session.note } : {}) };
}
