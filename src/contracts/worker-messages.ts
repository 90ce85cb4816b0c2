// Messages between the main thread and a model instance worker. Tensor data travels in
// transferred ArrayBuffers (zero-copy); everything else is small plain data.

import type { OrtElementType } from './datatypes.js';
import type { ExecutionTimings } from './execution.js';
import type { Tensor } from './tensors.js';

/** ONNX Runtime's element type names (onnxruntime-common Tensor.Type), from the datatype table. */
export type { OrtElementType };

export interface TensorInfo {
  readonly name: string;
  readonly type: OrtElementType;
  /** Numbers are fixed sizes; strings are symbolic dimensions (e.g. 'batch_size'). */
  readonly shape: readonly (number | string)[];
}

export interface SessionMetadata {
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  /** The model file's metadata_props (e.g. a paged segment's conveyor.sliding_window); absent where not read. */
  readonly properties?: Readonly<Record<string, string>>;
}

export type Device = 'cpu' | 'cuda';

/**
 * TEST-ONLY (src/threads/fault-injection.ts): the worker throws, or exits, at its `count`-th
 * engine step, draft-model forward pass or model execution (1-based, counted from the worker's
 * start), or in the parse pool's `count`-th job.
 */
export interface FaultInjection {
  readonly action: 'throw' | 'exit';
  /**
   * What is counted: LLM engine steps, the forward passes of an LLM engine's draft model
   * (speculative_config method draft_model), classic model executions, or parse-worker jobs (the
   * pool's, across its workers).
   */
  readonly at: 'step' | 'draft_pass' | 'execution' | 'job';
  readonly count: number;
}

/** workerData of an instance worker. */
export interface InstanceWorkerData {
  readonly modelPath: string;
  readonly device: Device;
  readonly intraOpNumThreads: number;
  /** false: ORT's intra-op threads sleep between parallel sections (config parameter intra_op_allow_spinning); absent: ORT's default. */
  readonly intraOpSpinning?: boolean | undefined;
  readonly label: string;
  /** Absent unless a test enabled fault injection. */
  readonly faultInjection?: FaultInjection;
  /** Nice steps the instance thread (and ORT's threads it starts) run below the server (--compute-thread-nice); absent or 0: the same priority. */
  readonly threadNice?: number;
}

export type ToInstanceWorker = { readonly type: 'run'; readonly id: number; readonly inputs: readonly Tensor[]; readonly outputNames: readonly string[] } | { readonly type: 'close' };

export type FromInstanceWorker =
  | { readonly type: 'ready'; readonly metadata: SessionMetadata; readonly device: Device; readonly note?: string }
  | { readonly type: 'result'; readonly id: number; readonly outputs: readonly Tensor[]; readonly timings: ExecutionTimings }
  | { readonly type: 'error'; readonly id: number; readonly message: string }
  | { readonly type: 'fatal'; readonly message: string };
