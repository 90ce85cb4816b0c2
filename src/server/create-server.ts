// Builds and starts the whole server from options: repository → model manager → service →
// HTTP and gRPC front ends. Used by the CLI and by the integration tests.

import type { ServerOptions } from '../config/server-options.js';
import { ModelManager } from '../repository/model-manager.js';
import { ConveyorService } from '../serving/conveyor-service.js';
import { loadOnnxModel } from '../serving/onnx-backend.js';
import type { BackendLoader } from '../serving/served-model.js';
import { createGrpcServer } from './grpc/index.js';
import { createHttpApp } from './http/app.js';

export interface RunningServer {
  readonly httpPort: number;
  readonly grpcPort: number;
  readonly service: ConveyorService;
  readonly manager: ModelManager;
  /** Health goes false, front ends stop, in-flight requests finish (up to the exit timeout), models unload. */
  stop(): Promise<void>;
}

export interface StartOptions {
  readonly log: (line: string) => void;
  /** Backends beyond the built-in ones (the LLM engine registers "llm"). */
  readonly loaders?: Readonly<Record<string, BackendLoader>>;
}

export async function startServer(options: ServerOptions, start: StartOptions): Promise<RunningServer> {
  const { log } = start;
  const manager = new ModelManager({
    root: options.modelRepository,
    mode: options.modelControlMode,
    loaders: { onnxruntime: loadOnnxModel, ...start.loaders },
    log,
  });
  await manager.start(options.loadModels);
  if (options.modelControlMode === 'poll') manager.startPolling(options.repositoryPollSecs);
  const service = new ConveyorService(manager, { mode: options.modelControlMode, strictReadiness: options.strictReadiness });

  const http = createHttpApp(service, { logger: false });
  await http.listen({ host: options.host, port: options.httpPort });
  const httpPort = (http.server.address() as { port: number }).port;
  const grpc = createGrpcServer(service);
  const grpcPort = await grpc.start(options.host, options.grpcPort);
  log(`HTTP (KServe v2) listening on ${options.host}:${httpPort}`);
  log(`gRPC (KServe v2) listening on ${options.host}:${grpcPort}`);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      service.beginShutdown();
      const deadline = new Promise<void>((resolve) => setTimeout(resolve, options.exitTimeoutSecs * 1000).unref());
      await Promise.race([Promise.all([http.close(), grpc.stop()]), deadline]);
      await manager.stop();
    })());
  return { httpPort, grpcPort, service, manager, stop };
}
