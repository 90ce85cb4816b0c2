// The seam between the dynamic batcher (main thread) and a model's instances (worker threads).

import type { Parameters } from './infer.js';
import type { Tensor } from './tensors.js';

export interface ExecutionTimings {
  /** Preparing inputs (copy into ORT tensors) on the instance, in ns. */
  readonly computeInputNs: number;
  /** session.run, in ns. */
  readonly computeInferNs: number;
  /** Copying outputs out, in ns. */
  readonly computeOutputNs: number;
}

export interface ExecutionResult {
  /** Batched outputs, in the order of the requested names. */
  readonly outputs: readonly Tensor[];
  readonly timings: ExecutionTimings;
}

/** One request of a batch, for an executor that takes a batch as its requests (a TypeScript model's execute(requests)). */
export interface ExecutionRequest {
  readonly id?: string;
  readonly inputs: readonly Tensor[];
  readonly outputNames: readonly string[];
  readonly parameters: Parameters;
  /** Aborts when the client goes away after the batch was dispatched: the executor cancels the request's own work. */
  readonly signal?: AbortSignal;
  /** A decoupled model's responses, each as it is sent; absent, the request's one response is its outcome. */
  readonly onResponse?: (outputs: readonly Tensor[]) => void;
}

/** How one request of a batch ended: its outputs (none for a decoupled request, whose responses went to onResponse), or its own failure. */
export type RequestOutcome = { readonly ok: true; readonly outputs: readonly Tensor[] } | { readonly ok: false; readonly error: Error };

export interface RequestsExecutionResult {
  /** One per request, in the batch's order. */
  readonly outcomes: readonly RequestOutcome[];
  readonly timings: ExecutionTimings;
}

/** A loaded model version's instances (instance_group): the batcher's only view of them. */
export interface ModelExecutor {
  /** Instances free to take a batch now. */
  readonly freeInstances: number;
  /** Runs one (already stacked) batch on a free instance. Rejects with a ConveyorError. */
  execute(inputs: readonly Tensor[], outputNames: readonly string[]): Promise<ExecutionResult>;
  /**
   * Present on executors that take a batch as its requests rather than stacked (TypeScript
   * models): the batcher calls this instead of execute(), and each request may fail on its own.
   * Rejects (the whole batch fails) with a ConveyorError.
   */
  executeRequests?(requests: readonly ExecutionRequest[]): Promise<RequestsExecutionResult>;
  /** Called each time an instance becomes free. */
  onInstanceFree(listener: () => void): void;
}
