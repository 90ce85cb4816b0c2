// The seam between the dynamic batcher (main thread) and a model's instances (worker threads).

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

/** A loaded model version's instances (instance_group): the batcher's only view of them. */
export interface ModelExecutor {
  /** Instances free to take a batch now. */
  readonly freeInstances: number;
  /** Runs one (already stacked) batch on a free instance. Rejects with a ConveyorError. */
  execute(inputs: readonly Tensor[], outputNames: readonly string[]): Promise<ExecutionResult>;
  /** Called each time an instance becomes free. */
  onInstanceFree(listener: () => void): void;
}
