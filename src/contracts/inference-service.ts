// What the front ends ask of the server core. Every method throws ConveyorError (src/errors.ts)
// with a catalog code; each front end maps that code to its protocol's error shape.

import type { InferRequest, InferResponse, InferStreamEvent } from './infer.js';
import type { ModelConfig } from './model-config.js';
import type { DataType } from './tensors.js';

export interface ServerMetadata {
  readonly name: string;
  readonly version: string;
  readonly extensions: readonly string[];
}

export interface TensorMetadata {
  readonly name: string;
  readonly datatype: DataType;
  /** Including the batch dimension (-1) when the model batches. */
  readonly shape: readonly number[];
}

/**
 * Which precision variant a loaded version runs: `precision` names a row of
 * src/repository/variants.ts (fp32, fp16, int8, q4, ...; `custom` for a file outside it) and
 * `model_file` the file loaded, relative to the version directory.
 */
export interface ModelVariant {
  readonly precision: string;
  readonly model_file: string;
}

export interface ModelMetadata {
  readonly name: string;
  readonly versions: readonly string[];
  readonly platform: string;
  readonly inputs: readonly TensorMetadata[];
  readonly outputs: readonly TensorMetadata[];
  /** KServe's optional metadata parameters: the variant the (highest READY) version runs. */
  readonly parameters: ModelVariant;
}

/** A cumulative {count, ns} pair, Triton's StatisticDuration. */
export interface StatisticDuration {
  count: number;
  ns: number;
}

export interface ModelStatistics {
  readonly name: string;
  readonly version: string;
  /** Milliseconds since the epoch; 0 before the first inference. */
  readonly last_inference: number;
  readonly inference_count: number;
  readonly execution_count: number;
  readonly inference_stats: Record<'success' | 'fail' | 'queue' | 'compute_input' | 'compute_infer' | 'compute_output' | 'cache_hit' | 'cache_miss', StatisticDuration>;
  readonly batch_stats: readonly {
    batch_size: number;
    compute_input: StatisticDuration;
    compute_infer: StatisticDuration;
    compute_output: StatisticDuration;
  }[];
  readonly memory_usage: readonly { type: string; id: number; byte_size: number }[];
}

export type ModelState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

export interface RepositoryIndexEntry {
  readonly name: string;
  readonly version: string;
  readonly state: ModelState;
  readonly reason: string;
  /** A loaded version's precision variant (an extra field: Triton clients read the four above and ignore others). */
  readonly precision?: string;
}

export interface LoadOverride {
  /** ModelConfig as a JSON string (Triton's `config` parameter). */
  readonly config?: string;
  /** `file:<version>/<path>` contents, keyed by `<version>/<path>`. */
  readonly files?: Readonly<Record<string, Uint8Array>>;
}

export interface InferenceService {
  serverMetadata(): ServerMetadata;
  isLive(): boolean;
  isReady(): boolean;
  modelReady(name: string, version?: string): boolean;
  modelMetadata(name: string, version?: string): ModelMetadata;
  modelConfig(name: string, version?: string): ModelConfig;
  /** No name: every loaded model. */
  modelStatistics(name?: string, version?: string): ModelStatistics[];
  /** `signal` aborts a queued request (client went away). */
  infer(request: InferRequest, signal?: AbortSignal): Promise<InferResponse>;
  /**
   * A decoupled model's responses, streamed by the model itself (a TypeScript model's sender);
   * undefined when the model takes another streaming path (an LLM: the front ends' generation).
   */
  inferStream?(request: InferRequest, signal?: AbortSignal): AsyncIterable<InferStreamEvent> | undefined;
  /** Lists the repository directory, hence asynchronous. */
  repositoryIndex(readyOnly: boolean): Promise<RepositoryIndexEntry[]>;
  loadModel(name: string, override?: LoadOverride): Promise<void>;
  unloadModel(name: string, options?: { unloadDependents?: boolean }): Promise<void>;
  /**
   * Holds the model loaded (loading it first with --load-on-demand) until release(); what a
   * front end takes before it reads a model's config for a request. Absent, models never come
   * and go on their own.
   */
  acquire?(name: string): Promise<{ release(): void }>;
}
