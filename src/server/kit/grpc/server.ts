// The one gRPC server every gRPC front end is served on: the composition root hands it each front
// end's service (KServe's inference.GRPCInferenceService, conveyor.v1.GenerationService), and it
// adds grpc.health.v1.Health and the access interceptor, binds the port and drains on stop.

import { Server, ServerCredentials, type ChannelOptions, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { InferenceService } from '../../../contracts/inference-service.js';
import type { AccessPolicy } from '../../../security/access-policy.js';
import { accessInterceptor } from './access.js';
import { createHealthService } from './health.js';
import { DEFAULT_PROTO_DIR, loadServiceDefinition } from './protos.js';

/** Triton's limit (INT32_MAX), which tritonclient also sets; grpc-js receives only 4 MiB by default. */
export const MAX_MESSAGE_BYTES = 2 ** 31 - 1;

/** What a gRPC front end contributes to the server: one service and its handlers. */
export interface GrpcService {
  readonly definition: ServiceDefinition;
  readonly implementation: UntypedServiceImplementation;
}

export interface GrpcServerOptions {
  /** Directory holding health.proto (default protos/). */
  readonly protoDir?: string;
  /** Largest message received or sent (default MAX_MESSAGE_BYTES). */
  readonly maxMessageBytes?: number;
  /** Concurrent calls one client connection may hold open (HTTP/2 streams); grpc-js's default is unbounded. */
  readonly maxConcurrentStreams?: number;
  /** grpc-js server options, applied over the message-size and stream defaults. */
  readonly channelOptions?: ChannelOptions;
  /** How long stop() lets in-flight calls finish before cancelling them. Default 5000 ms. */
  readonly shutdownGraceMs?: number;
  /** How often Health.Watch re-checks readiness. Default 1000 ms. */
  readonly healthWatchIntervalMs?: number;
  /** Who may call which RPC (access.ts); without it every RPC is open. */
  readonly access?: AccessPolicy;
}

export interface GrpcServer {
  readonly server: Server;
  /** Binds and serves; resolves with the bound port (useful with port 0). */
  start(host: string, port: number): Promise<number>;
  /** Stops accepting calls, waits up to the grace period for in-flight ones, then cancels the rest. */
  stop(): Promise<void>;
}

/** The front ends' services and grpc.health.v1.Health (answering from `readiness`) on one server. */
export function createGrpcServer(readiness: InferenceService, services: readonly GrpcService[], options: GrpcServerOptions = {}): GrpcServer {
  const server = new Server({
    'grpc.max_receive_message_length': options.maxMessageBytes ?? MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': options.maxMessageBytes ?? MAX_MESSAGE_BYTES,
    ...(options.maxConcurrentStreams !== undefined ? { 'grpc.max_concurrent_streams': options.maxConcurrentStreams } : {}),
    ...options.channelOptions,
    // An open server skips the interceptor: no per-call wrapper where nothing is checked.
    interceptors: options.access?.guardsAnything() ? [accessInterceptor(options.access)] : [],
  });
  const health = createHealthService(readiness, options.healthWatchIntervalMs ?? 1000);
  for (const { definition, implementation } of services) server.addService(definition, implementation);
  server.addService(loadServiceDefinition('health.proto', 'grpc.health.v1.Health', options.protoDir ?? DEFAULT_PROTO_DIR), health.implementation);

  return {
    server,
    start: (host, port) => bind(server, host, port),
    stop: () => {
      health.close();
      return shutdown(server, options.shutdownGraceMs ?? 5000);
    },
  };
}

function bind(server: Server, host: string, port: number): Promise<number> {
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new Promise((resolve, reject) => {
    server.bindAsync(address, ServerCredentials.createInsecure(), (error, boundPort) => (error ? reject(error) : resolve(boundPort)));
  });
}

function shutdown(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
