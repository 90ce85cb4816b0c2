// Public surface of the gRPC kit: what the KServe and generation gRPC front ends share (one
// server on one port, access, status mapping, health, proto loading), owned by neither.
export { createGrpcServer, MAX_MESSAGE_BYTES } from './server.js';
export type { GrpcServer, GrpcServerOptions, GrpcService } from './server.js';
export { DEFAULT_PROTO_DIR, PROTO_LOADER_OPTIONS, loadServiceDefinition, loadServiceDefinitions } from './protos.js';
export { RPC_ACCESS, rpcAccess } from './access.js';
export { cancelledError, toGrpcStatus, toGrpcStatusWithDetails, unsupported } from './status.js';
export type { WireLong } from './wire-types.js';
