// Public surface of the KServe v2 gRPC front end: inference.GRPCInferenceService, served on the
// gRPC kit's server (src/server/kit/grpc/) beside the generation front end.
export { kserveGrpcService } from './service.js';
export type { KserveGrpcOptions } from './service.js';
export type { DecoupledEvent, DecoupledInfer } from './stream-infer.js';
export { llmDecoupledInfer } from './decoupled-llm.js';
