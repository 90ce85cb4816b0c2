// Messages between the main thread and a TypeScript model's instance worker (backend
// "typescript"). Tensor data travels in transferred ArrayBuffers; everything else is small plain
// data. A batch is its requests, never stacked: the model's execute() gets them one by one, as
// Triton's Python backend hands a model.py its list of requests.

import type { ExecutionTimings } from './execution.js';
import type { Parameters, RequestedOutput } from './infer.js';
import type { ModelConfig } from './model-config.js';
import type { Tensor } from './tensors.js';

/** initialize()'s argument: Triton's `args` dict, with the config as an object rather than a JSON string. */
export interface InitializeArgs {
  readonly model_config: ModelConfig;
  readonly model_name: string;
  readonly model_version: string;
  /** The model's directory in the repository (config.pbtxt, labels, the version directories). */
  readonly model_repository: string;
  /** The version directory the model file was loaded from. */
  readonly model_version_dir: string;
  readonly model_instance_kind: 'CPU';
  /** `<model>_<index>`, Triton's instance name. */
  readonly model_instance_name: string;
  readonly model_instance_index: number;
}

/** workerData of a TypeScript model's instance worker. */
export interface TypeScriptWorkerData {
  /** Absolute path of model.ts / model.js. */
  readonly modelFile: string;
  readonly args: InitializeArgs;
  /** model_transaction_policy decoupled: requests carry a response sender. */
  readonly decoupled: boolean;
  readonly label: string;
  /** Nice steps the instance thread runs below the server (--compute-thread-nice); absent or 0: the same priority. */
  readonly threadNice?: number;
}

/** One request of a batch as it crosses to the worker. */
export interface WorkerRequest {
  /** The batch-local request number the worker's answers name. */
  readonly seq: number;
  /** The client's request id ('' when it gave none). */
  readonly id: string;
  readonly inputs: readonly Tensor[];
  readonly requestedOutputs: readonly string[];
  readonly parameters: Parameters;
}

/** A failure as it crosses threads: the catalog code the main thread raises it with. */
export interface WireError {
  readonly code: 'INVALID_ARG' | 'NOT_FOUND' | 'UNAVAILABLE' | 'INTERNAL' | 'UNSUPPORTED' | 'CANCELLED' | 'DEADLINE_EXCEEDED';
  readonly message: string;
}

/** A model-to-model call (BLS) from inside execute(), as the worker asks the main thread to run it. */
export interface BlsRequest {
  readonly model: string;
  /** '' or absent: the highest READY version. */
  readonly version?: string;
  readonly inputs: readonly Tensor[];
  readonly outputs?: readonly RequestedOutput[];
  readonly parameters: Parameters;
}

export interface BlsResponse {
  readonly model: string;
  readonly version: string;
  readonly outputs: readonly Tensor[];
}

export type ToTypeScriptWorker =
  | { readonly type: 'execute'; readonly batch: number; readonly requests: readonly WorkerRequest[] }
  /** The client went away: the request's signal aborts and its BLS calls end CANCELLED. */
  | { readonly type: 'cancel'; readonly seq: number }
  /** One answer to BLS call `call`: a response (final ends it), or its failure. */
  | { readonly type: 'bls-answer'; readonly call: number; readonly response?: BlsResponse; readonly error?: WireError; readonly final: boolean }
  | { readonly type: 'finalize' };

export type FromTypeScriptWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'fatal'; readonly message: string }
  /** A response to request `seq` (decoupled models send many); `final` completes the request. */
  | { readonly type: 'response'; readonly seq: number; readonly outputs?: readonly Tensor[]; readonly error?: WireError; readonly final: boolean }
  /** execute() returned (or threw: `error` fails every request of the batch not yet complete). */
  | { readonly type: 'executed'; readonly batch: number; readonly timings: ExecutionTimings; readonly error?: WireError }
  | { readonly type: 'bls'; readonly call: number; readonly seq: number; readonly request: BlsRequest; readonly stream: boolean }
  /** The model stopped reading BLS call `call` (a stream left early, or the call's request was cancelled). */
  | { readonly type: 'bls-cancel'; readonly call: number }
  | { readonly type: 'finalized' };
