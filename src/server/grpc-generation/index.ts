// Public surface of the generation gRPC front end: conveyor.v1.GenerationService/Generate
// (protos/generate.proto), served on the gRPC kit's server (src/server/kit/grpc/) beside KServe's.
export { generationGrpcService } from './generation-service.js';
