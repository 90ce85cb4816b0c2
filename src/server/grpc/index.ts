// Public surface of the gRPC front end.
export { createGrpcServer, loadServiceDefinitions, DEFAULT_PROTO_DIR, MAX_MESSAGE_BYTES, PROTO_LOADER_OPTIONS } from './server.js';
export type { GrpcServer, GrpcServerOptions } from './server.js';
export type { DecoupledEvent, DecoupledInfer } from './stream-infer.js';
export { llmDecoupledInfer } from './decoupled-llm.js';
export { RPC_ACCESS, rpcAccess } from './access.js';
