// Messages between the main thread and an LLM engine worker. Token output crosses as one
// message per engine step (StepOutput), never one per token.

import type { GenerateRequest, SchedulingPolicy, StepOutput } from './generate.js';
import type { KvEventsConfig } from './kv-events.js';
import type { Device, FaultInjection } from './worker-messages.js';

/**
 * The kv_cache_dtype parameter's values (vLLM's --kv-cache-dtype, llama.cpp's --cache-type-k/-v):
 * auto keeps the model's float type; fp16 stores K/V in float16, int8 as int8 with a float32
 * scale per position and kv head (symmetric, like llama.cpp's q8_0 cache with one scale per head
 * row) — both the native paged attention only.
 */
export const KV_CACHE_DTYPES = ['auto', 'fp16', 'int8'] as const;
export type KvCacheDtype = (typeof KV_CACHE_DTYPES)[number];

/** Element types a runner's KV storage holds: the model's float type, or what kv_cache_dtype asked for. */
export type KvElementType = 'float32' | 'float16' | 'int8';

/** workerData of an engine worker (mirrors EngineConfig; plain data). */
export interface EngineWorkerData {
  readonly modelPath: string;
  readonly device: Device;
  readonly intraOpNumThreads: number;
  /** false: ORT's intra-op threads sleep between parallel sections (config parameter intra_op_allow_spinning); absent: ORT's default. */
  readonly intraOpSpinning?: boolean | undefined;
  readonly maxNumSeqs: number;
  readonly maxNumBatchedTokens: number;
  readonly maxModelLen: number;
  readonly blockSize: number;
  readonly kvCacheBytes: number;
  /** fp16 / int8: the KV cache in that type whatever the model's float type (kv_cache_dtype; the native paged attention only); absent or auto: the model's own. */
  readonly kvCacheDtype?: KvCacheDtype;
  readonly enablePrefixCaching: boolean;
  /** 'fcfs' when absent. */
  readonly schedulingPolicy?: SchedulingPolicy;
  readonly sampleableVocabSize?: number;
  /** The model's tokenizer.json, read when the first grammar-constrained request arrives; absent: such requests are refused. */
  readonly tokenizerPath?: string;
  /** Absent unless a test enabled fault injection. */
  readonly faultInjection?: FaultInjection;
  /** Publish KV cache events (the kv_events_config parameter); absent: off. */
  readonly kvEvents?: KvEventsConfig;
  /** Nice steps the engine thread (and the ORT and grammar threads it starts) run below the server (--compute-thread-nice); absent or 0: the same priority. */
  readonly threadNice?: number;
  /** The longest a new grammar may take to compile, seconds (--structured-outputs-compile-timeout-secs); absent or 0: unbounded. */
  readonly grammarCompileTimeoutSecs?: number;
  /** Speculative decoding (the speculative_config parameter); absent: off. */
  readonly speculative?: SpeculativeConfig;
}

/** Speculative decoding, as vLLM's speculative_config spells it: one entry per method served. */
export type SpeculativeConfig = NgramSpeculativeConfig | DraftModelSpeculativeConfig;

/** What every method shares: how many tokens a sequence proposes, and when nobody proposes. */
interface SpeculationLimits {
  readonly numSpeculativeTokens: number;
  /**
   * No proposals while more than this many sequences run (vLLM's disable_by_batch_size): a batch
   * that large is compute-bound, and checking proposals would cost more than they save.
   */
  readonly disableByBatchSize: number;
}

/**
 * N-gram (prompt lookup) speculative decoding: each decoding sequence proposes up to
 * numSpeculativeTokens tokens that followed the latest earlier occurrence of its last n tokens (n
 * from promptLookupMax down to promptLookupMin) in its own prompt and output, and one step checks
 * them all.
 */
export interface NgramSpeculativeConfig extends SpeculationLimits {
  readonly method: 'ngram';
  readonly promptLookupMin: number;
  readonly promptLookupMax: number;
}

/**
 * Draft-model speculative decoding: a smaller decoder sharing the target's tokenizer runs in the
 * same engine worker, with its own runner and KV cache, and proposes numSpeculativeTokens tokens
 * per decoding sequence (one batched forward pass per token) for the target to check.
 */
export interface DraftModelSpeculativeConfig extends SpeculationLimits {
  readonly method: 'draft_model';
  /** The draft decoder's file or segments directory, resolved by the llm backend (opened like the target's). */
  readonly draftModelPath: string;
}

/** The runner adapters there are (src/runners/create-runner.ts maps a model's I/O names to one). */
export type RunnerKind = 'past-key-values' | 'paged' | 'paged-native';

export interface EngineReadyInfo {
  /** The runner the engine opened: which attention backend actually runs. */
  readonly runnerKind: RunnerKind;
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly vocabSize: number;
  readonly kvType: KvElementType;
  readonly numBlocks: number;
  readonly blockSize: number;
  readonly device: Device;
  readonly note?: string;
}

export type ToEngine =
  | { readonly type: 'add'; readonly request: GenerateRequest }
  | { readonly type: 'abort'; readonly requestId: string; readonly reason: 'abort' | 'stop' }
  | { readonly type: 'close' };

export type FromEngine =
  | { readonly type: 'ready'; readonly info: EngineReadyInfo }
  | { readonly type: 'fatal'; readonly message: string }
  | { readonly type: 'log'; readonly line: string }
  | { readonly type: 'step'; readonly output: StepOutput }
  | { readonly type: 'closed' };
