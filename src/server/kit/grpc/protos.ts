// The server's protos (protos/), loaded at startup with @grpc/proto-loader under one set of
// options, which the front ends' wire types follow. Each gRPC front end loads the service it
// serves; loadServiceDefinitions gives clients (tests, bench) every service on the port.

import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options as LoaderOptions } from '@grpc/proto-loader';

export const DEFAULT_PROTO_DIR = fileURLToPath(new URL('../../../../protos/', import.meta.url));

/** The object shapes the wire types describe follow from these options. */
export const PROTO_LOADER_OPTIONS: LoaderOptions = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

/** One service of one proto file (its imports resolved in protoDir), e.g. ('health.proto', 'grpc.health.v1.Health'). */
export function loadServiceDefinition(file: string, service: string, protoDir: string = DEFAULT_PROTO_DIR): ServiceDefinition {
  return loadSync(file, { ...PROTO_LOADER_OPTIONS, includeDirs: [protoDir] })[service] as ServiceDefinition;
}

/** Every service the gRPC port serves: KServe's, health and conveyor.v1.GenerationService. */
export function loadServiceDefinitions(protoDir: string = DEFAULT_PROTO_DIR): { inference: ServiceDefinition; health: ServiceDefinition; generation: ServiceDefinition } {
  const definition = loadSync(['grpc_service.proto', 'health.proto', 'generate.proto'], { ...PROTO_LOADER_OPTIONS, includeDirs: [protoDir] });
  return {
    inference: definition['inference.GRPCInferenceService'] as ServiceDefinition,
    health: definition['grpc.health.v1.Health'] as ServiceDefinition,
    generation: definition['conveyor.v1.GenerationService'] as ServiceDefinition,
  };
}
