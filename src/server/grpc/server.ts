// The KServe v2 / Triton gRPC front end: GRPCInferenceService and grpc.health.v1.Health on one
// grpc-js server, protos loaded at startup with @grpc/proto-loader.

import { fileURLToPath } from 'node:url';
import { Server, ServerCredentials, type ChannelOptions, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options as LoaderOptions } from '@grpc/proto-loader';
import type { InferenceService } from '../../contracts/inference-service.js';
import type { AccessPolicy } from '../../security/access-policy.js';
import type { LlmLookup } from '../generation/lookup.js';
import { accessInterceptor } from './access.js';
import { generationHandlers } from './generation-service.js';
import { inferenceHandlers } from './handlers.js';
import type { RuntimeSettings } from '../../config/runtime-settings.js';
import { createHealthService } from './health.js';
import type { DecoupledInfer } from './stream-infer.js';

export const DEFAULT_PROTO_DIR = fileURLToPath(new URL('../../../protos/', import.meta.url));

/** The object shapes wire-types.ts describes follow from these options. */
export const PROTO_LOADER_OPTIONS: LoaderOptions = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

/** Triton's limit (INT32_MAX), which tritonclient also sets; grpc-js receives only 4 MiB by default. */
export const MAX_MESSAGE_BYTES = 2 ** 31 - 1;

export interface GrpcServerOptions {
  /** Streams decoupled (LLM) models over ModelStreamInfer (llmDecoupledInfer). */
  readonly decoupled?: DecoupledInfer;
  /** Serves conveyor.v1.GenerationService (protos/generate.proto) over these LLMs. */
  readonly generation?: LlmLookup;
  /** Directory holding grpc_service.proto, model_config.proto, health.proto and generate.proto. */
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
  /** The log and trace settings behind LogSettings and TraceSetting (shared with HTTP); fresh defaults when absent. */
  readonly settings?: RuntimeSettings;
}

export interface GrpcServer {
  readonly server: Server;
  /** Binds and serves; resolves with the bound port (useful with port 0). */
  start(host: string, port: number): Promise<number>;
  /** Stops accepting calls, waits up to the grace period for in-flight ones, then cancels the rest. */
  stop(): Promise<void>;
}

export function loadServiceDefinitions(protoDir: string = DEFAULT_PROTO_DIR): { inference: ServiceDefinition; health: ServiceDefinition; generation: ServiceDefinition } {
  const definition = loadSync(['grpc_service.proto', 'health.proto', 'generate.proto'], { ...PROTO_LOADER_OPTIONS, includeDirs: [protoDir] });
  return {
    inference: definition['inference.GRPCInferenceService'] as ServiceDefinition,
    health: definition['grpc.health.v1.Health'] as ServiceDefinition,
    generation: definition['conveyor.v1.GenerationService'] as ServiceDefinition,
  };
}

export function createGrpcServer(service: InferenceService, options: GrpcServerOptions = {}): GrpcServer {
  const definitions = loadServiceDefinitions(options.protoDir);
  const server = new Server({
    'grpc.max_receive_message_length': options.maxMessageBytes ?? MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': options.maxMessageBytes ?? MAX_MESSAGE_BYTES,
    ...(options.maxConcurrentStreams !== undefined ? { 'grpc.max_concurrent_streams': options.maxConcurrentStreams } : {}),
    ...options.channelOptions,
    // An open server skips the interceptor: no per-call wrapper where nothing is checked.
    interceptors: options.access?.guardsAnything() ? [accessInterceptor(options.access)] : [],
  });
  const health = createHealthService(service, options.healthWatchIntervalMs ?? 1000);
  server.addService(definitions.inference, inferenceHandlers(service, options.decoupled, options.settings));
  server.addService(definitions.health, health.implementation);
  if (options.generation) server.addService(definitions.generation, generationHandlers(options.generation));

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
