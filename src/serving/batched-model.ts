// What a model served by instances behind Triton's dynamic batcher shares, whatever its instances
// run (an ONNX session, a TypeScript model): its batcher over its instances, the statistics and
// failure counts the batcher keeps, the queue depth, the instances' liveness and supervision,
// and a close that drains the queue before stopping the instances. Backends add infer().

import type { InferRequest, InferResponse } from '../contracts/infer.js';
import type { ModelStatistics, ModelVariant } from '../contracts/inference-service.js';
import type { ModelConfig } from '../contracts/model-config.js';
import type { ModelExecutor } from '../contracts/execution.js';
import { DynamicBatcher } from '../batcher/dynamic-batcher.js';
import type { FailureReason } from '../batcher/stats.js';
import type { SupervisionStatus } from '../threads/worker-supervisor.js';
import type { ServedModel } from './served-model.js';

/** A model's instances as the batched model sees them: the batcher's executor, plus liveness and close. */
export interface BatchedInstances extends ModelExecutor {
  readonly workersAlive: readonly boolean[];
  readonly supervision: SupervisionStatus;
  close(): Promise<void>;
}

export abstract class BatchedModel implements ServedModel {
  protected readonly batcher: DynamicBatcher;

  protected constructor(
    readonly name: string,
    readonly version: number,
    readonly config: ModelConfig,
    readonly variant: ModelVariant,
    protected readonly instances: BatchedInstances,
  ) {
    this.batcher = new DynamicBatcher({ config, version: String(version), executor: instances });
  }

  abstract infer(request: InferRequest, signal?: AbortSignal): Promise<InferResponse>;

  statistics(): ModelStatistics {
    return this.batcher.stats.snapshot();
  }

  failures(): Readonly<Record<FailureReason, number>> {
    return this.batcher.stats.failures();
  }

  pendingRequests(): number {
    return this.batcher.numQueued;
  }

  workersAlive(): readonly boolean[] {
    return this.instances.workersAlive;
  }

  supervision(): SupervisionStatus {
    return this.instances.supervision;
  }

  async close(): Promise<void> {
    await this.batcher.close();
    await this.instances.close();
  }
}
