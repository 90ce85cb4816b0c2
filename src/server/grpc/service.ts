// The KServe v2 / Triton gRPC front end as the service it adds to the gRPC kit's server:
// inference.GRPCInferenceService (protos/grpc_service.proto) and its handlers.

import type { InferenceService } from '../../contracts/inference-service.js';
import type { RuntimeSettings } from '../../config/runtime-settings.js';
import { loadServiceDefinition } from '../kit/grpc/protos.js';
import type { GrpcService } from '../kit/grpc/server.js';
import { inferenceHandlers } from './handlers.js';
import type { DecoupledInfer } from './stream-infer.js';

export interface KserveGrpcOptions {
  /** Streams decoupled (LLM) models over ModelStreamInfer (llmDecoupledInfer). */
  readonly decoupled?: DecoupledInfer;
  /** The log and trace settings behind LogSettings and TraceSetting (shared with HTTP); fresh defaults when absent. */
  readonly settings?: RuntimeSettings;
  /** Directory holding grpc_service.proto and model_config.proto (default protos/). */
  readonly protoDir?: string;
}

export function kserveGrpcService(service: InferenceService, options: KserveGrpcOptions = {}): GrpcService {
  return {
    definition: loadServiceDefinition('grpc_service.proto', 'inference.GRPCInferenceService', options.protoDir),
    implementation: inferenceHandlers(service, options.decoupled, options.settings),
  };
}
