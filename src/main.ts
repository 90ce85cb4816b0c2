// Builds and starts the whole server from options: repository → model manager → service →
// HTTP and gRPC front ends, and the metrics port. Used by the CLI and by the integration tests.
// The composition root: the only module that imports every front end (test/unit/architecture).

import type { ServerOptions } from './config/server-options.js';
import { createRuntimeSettings, type RuntimeSettings } from './config/runtime-settings.js';
import { createMetrics, startMetricsServer, type ConveyorMetrics } from './metrics/index.js';
import { ModelManager } from './serving/model-manager.js';
import { ModelResidency } from './serving/model-residency.js';
import { ConveyorService } from './serving/conveyor-service.js';
import { loadLlmModel } from './serving/llm-backend.js';
import { loadOnnxModel } from './serving/onnx-backend.js';
import { loadTypeScriptModel } from './serving/typescript-backend.js';
import { ENSEMBLE_PLATFORM, loadEnsembleModel } from './serving/ensemble-backend.js';
import type { BackendLoader, HubModelResolver } from './serving/served-model.js';
import { ResponseCache } from './serving/response-cache.js';
import type { ServerResponseCache } from './serving/cached-model.js';
import type { InferenceService } from './contracts/inference-service.js';
import { kserveGrpcService, llmDecoupledInfer } from './server/grpc/index.js';
import { generationGrpcService } from './server/grpc-generation/index.js';
import { createGrpcServer } from './server/kit/grpc/index.js';
import { kserveRoutes } from './server/http/index.js';
import { createHttpServer, DEFAULT_BODY_LIMIT, type HttpServerOptions } from './server/kit/http-app.js';
import type { HttpRouteAccess } from './server/kit/access.js';
import { OffThreadParser, type OffThreadParseOptions } from './server/kit/offthread-parse.js';
import { DEFAULT_LIMITS } from './config/limits.js';
import type { LlmLookup } from './server/generation/lookup.js';
import { registerMetricsRoute, type MetricsExposition } from './server/metrics/index.js';
import { registerUiRoutes, type UiOptions } from './server/ui/index.js';
import { installRecentErrors, RecentErrors } from './server/ui/recent-errors.js';
import { websocketLimits, websocketRoutes, type WebSocketOptions } from './server/websocket/index.js';
import { openaiRoutes } from '../openai-compat/index.js';
import { Admission } from './serving/admission.js';
import { anthropicRoutes } from '../anthropic-compat/index.js';
import { AccessPolicy } from './security/access-policy.js';
import { singleModelRepository } from './repository/single-model.js';
import { IdleConnectionCloser } from './server/kit/idle-connections.js';
import { drain, FINAL_EVENTS_GRACE_MS, settlesWithin } from './shutdown.js';

export interface RunningServer {
  readonly httpPort: number;
  readonly grpcPort: number;
  readonly metricsPort: number;
  readonly metrics: ConveyorMetrics;
  readonly service: ConveyorService;
  readonly manager: ModelManager;
  /** Every HTTP route with its access class (SECURITY.md's table; tests check it route by route). */
  readonly httpRoutes: readonly HttpRouteAccess[];
  /**
   * The drain (shutdown.ts): readiness false with the listeners still open, in-flight requests
   * finish (up to the exit timeout, then streams get a final error), models unload, front ends close.
   */
  stop(): Promise<void>;
}

export interface StartOptions {
  readonly log: (line: string, fields?: Record<string, unknown>) => void;
  /** pino options for fastify's request logging (one line per request with its id); off when absent. */
  readonly httpLogger?: object;
  /** Backends beyond the built-in ones (the LLM engine registers "llm"). */
  readonly loaders?: Readonly<Record<string, BackendLoader>>;
  /** The settings /v2/logging and /v2/trace/setting change (the CLI's logger follows them); fresh defaults when absent. */
  readonly settings?: RuntimeSettings;
  /** Resolves llm configs' hf_model parameters (Hub models by name; the CLI gives src/hub with the converter); absent, they fail to load. */
  readonly hubModels?: HubModelResolver;
}

export async function startServer(options: ServerOptions, start: StartOptions): Promise<RunningServer> {
  const settings = start.settings ?? createRuntimeSettings();
  // The server's own lines are info lines: log_info (v2/logging) switches them off and on.
  const log: StartOptions['log'] = (line, fields) => {
    if (settings.log.allows('info')) start.log(line, fields);
  };
  const responseCache = serverResponseCache(options);
  // Read at scrape time only, by which point the manager exists.
  const metrics = createMetrics({ models: () => manager.servedModels(), engineType: options.metricsEngineType, responseCache: () => responseCache?.summary() });
  if (options.hubModel !== undefined && options.model === undefined) throw new Error(`--model ${options.hubModel}: a Hub model is fetched by the CLI before the server starts`);
  // One load shedding for every generation of a model, whatever protocol it came by.
  const admission = new Admission({ maxQueuedRequests: options.maxQueuedRequests, maxQueuedTokens: options.limits.maxNumQueuedTokens });
  const root = options.model ? (await singleModelRepository(options.model, options.servedModelName, options, options.modelSource)).root : options.modelRepository;
  const manager = createModelManager(root, options, start, { metrics, admission, responseCache, log });
  await manager.start(options.loadModels);
  if (options.modelControlMode === 'poll') manager.startPolling(options.repositoryPollSecs);
  const residency = modelResidency(manager, options, metrics, log);
  const service = new ConveyorService(manager, { mode: options.modelControlMode, strictReadiness: options.strictReadiness, residency });

  const { limits } = options;
  // One policy for every front end: HTTP routes, the WebSocket upgrade, gRPC calls, metrics.
  const access = new AccessPolicy(options);
  log(access.describe());
  const http = createHttpApp(service, {
    logger: start.httpLogger ?? false,
    llm: service,
    access,
    websocket: websocketLimits(limits),
    connections: limits,
    linger: limits,
    bodyLimit: limits.httpMaxBodyBytes,
    jsonMaxDepth: limits.jsonMaxDepth,
    offThreadParse: { minBytes: limits.offthreadJsonBytes, threadNice: limits.computeThreadNice },
    streamSendTimeoutMs: limits.streamSendTimeoutSecs * 1000,
    sseKeepAliveMs: limits.sseKeepAliveIntervalSecs * 1000,
    settings,
    modelLeases: residency,
    metrics: metrics.registry,
    ui: { families: metrics.families, errors: new RecentErrors() },
  });
  registerApiFrontEnds(http, service, options, root);
  await http.listen({ host: options.host, port: options.httpPort });
  const httpPort = (http.server.address() as { port: number }).port;
  // Both gRPC front ends on one server and port: KServe's inference service and conveyor.v1.GenerationService.
  const grpcServices = [kserveGrpcService(service, { decoupled: llmDecoupledInfer(service), settings }), generationGrpcService(service)];
  const grpc = createGrpcServer(service, grpcServices, {
    access,
    maxMessageBytes: limits.grpcMaxMessageBytes,
    maxConcurrentStreams: limits.grpcMaxConcurrentStreams,
  });
  const grpcPort = await grpc.start(options.host, options.grpcPort);
  log(`HTTP (KServe v2) listening on ${options.host}:${httpPort}`);
  log(`gRPC (KServe v2) listening on ${options.host}:${grpcPort}`);
  // Liveness and readiness on the metrics port too, where serving traffic cannot crowd them out.
  const metricsServer = await startMetricsServer({ host: options.host, port: options.metricsPort, registry: metrics.registry, access, probes: service });
  log(`Metrics listening on ${options.host}:${metricsServer.port}`);

  const idleConnections = new IdleConnectionCloser(http.server);
  const closeFrontEnds = async (): Promise<void> => {
    idleConnections.begin();
    const closed = Promise.all([http.close(), grpc.stop()]);
    if (await settlesWithin(closed, FINAL_EVENTS_GRACE_MS)) return;
    // Left: clients that never sent a request or do not answer a close; nothing is owed them.
    http.server.closeAllConnections();
    grpc.server.forceShutdown();
  };
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= drain(
      {
        beginShutdown: () => service.beginShutdown(),
        unloadAll: () => {
          residency.stop();
          return manager.stop();
        },
        abortInFlight: (reason) => manager.abortInFlight(reason),
        closeFrontEnds,
        closeMetrics: () => metricsServer.close(),
        log,
      },
      options.exitTimeoutSecs * 1000,
    ).then(() => undefined));
  return { httpPort, grpcPort, metricsPort: metricsServer.port, metrics, service, manager, httpRoutes: http.routeAccess, stop };
}

/** Triton's local cache (--cache-config): one for the server, shared by every model whose config enables it. */
function serverResponseCache(options: ServerOptions): ServerResponseCache | undefined {
  return options.responseCache ? new ResponseCache({ capacityBytes: options.responseCache.sizeBytes }) : undefined;
}

/** What the model manager's backends share with the rest of the server. */
interface ManagerShares {
  readonly metrics: ConveyorMetrics;
  readonly admission: Admission;
  readonly responseCache: ServerResponseCache | undefined;
  readonly log: StartOptions['log'];
}

/** The model manager over `root`: every backend, given the server's metrics, limits, load shedding and serving address, and the response cache. */
function createModelManager(root: string, options: ServerOptions, start: StartOptions, shares: ManagerShares): ModelManager {
  const { metrics, admission, responseCache, log } = shares;
  return new ModelManager({
    root,
    mode: options.modelControlMode,
    loaders: withServingAddress(
      withLlmMetrics(
        { onnxruntime: loadOnnxModel, llm: loadLlmModel, [ENSEMBLE_PLATFORM]: loadEnsembleModel, typescript: loadTypeScriptModel, javascript: loadTypeScriptModel, ...start.loaders },
        metrics,
        options.limits,
        admission,
      ),
      options,
    ),
    log,
    memoryBudgetBytes: options.limits.memoryBudgetBytes,
    ...(responseCache ? { responseCache } : {}),
    ...(start.hubModels ? { hubModels: start.hubModels } : {}),
  });
}

/** Loads on demand, idle unload and sleep, from the --load-on-demand family of flags. */
function modelResidency(manager: ModelManager, options: ServerOptions, metrics: ConveyorMetrics, log: StartOptions['log']): ModelResidency {
  const { onDemand } = options;
  return new ModelResidency(manager, {
    loadOnDemand: onDemand.enabled,
    loadTimeoutSecs: onDemand.loadTimeoutSecs,
    limits: { maxModels: onDemand.maxLoadedModels, maxBytes: onDemand.maxLoadedModelBytes },
    keepAliveMs: onDemand.keepAliveMs,
    observer: metrics.lifecycle,
    log,
  });
}

/** The OpenAI and Anthropic routes on the HTTP app (their generations' load shedding is the serving layer's, src/serving/admission.ts). */
function registerApiFrontEnds(http: ReturnType<typeof createHttpApp>, service: ConveyorService, options: ServerOptions, root: string): void {
  const { corsAllowOrigins, limits } = options;
  const json = {
    jsonMaxBodyBytes: limits.jsonMaxBodyBytes,
    jsonMaxDepth: limits.jsonMaxDepth,
    streamSendTimeoutMs: limits.streamSendTimeoutSecs * 1000,
    sseKeepAliveMs: limits.sseKeepAliveIntervalSecs * 1000,
  };
  http.register(
    openaiRoutes(service, {
      corsAllowOrigins,
      modelRepository: root,
      responsesStoreSize: limits.responsesStoreSize,
      responsesStoreTtlSecs: limits.responsesStoreTtlSecs,
      ...json,
    }),
  );
  http.register(anthropicRoutes(service, { corsAllowOrigins, ...json }));
}

/** Every load request names the HTTP address this server serves on (an LLM's default KV events topic names it). */
function withServingAddress(loaders: Readonly<Record<string, BackendLoader>>, options: Pick<ServerOptions, 'host' | 'httpPort'>): Record<string, BackendLoader> {
  const servingAddress = { host: options.host, port: options.httpPort };
  return Object.fromEntries(Object.entries(loaders).map(([backend, load]) => [backend, (request) => load({ ...request, servingAddress })]));
}

/** Every backend gets the LLM metrics observer, the prompt/request limits and the load shedding in its load request (non-LLM backends ignore them). */
function withLlmMetrics(loaders: Readonly<Record<string, BackendLoader>>, metrics: ConveyorMetrics, limits: ServerOptions['limits'], admission: Admission): Record<string, BackendLoader> {
  return Object.fromEntries(Object.entries(loaders).map(([backend, load]) => [backend, (request) => load({ ...request, llmMetrics: metrics.llm, limits, admission })]));
}

export interface HttpAppOptions extends HttpServerOptions {
  /** The LLMs behind Triton's generate extension and the /v1/ws WebSocket; without it neither is served. */
  llm?: LlmLookup;
  /** Limits of /v1/ws (its upgrade is guarded like every route: src/server/kit/access.ts). */
  websocket?: WebSocketOptions;
  /** Deepest JSON nesting a KServe body may have (default 64). */
  jsonMaxDepth?: number;
  /** A generate_stream client that reads nothing this long is dropped (default: the limits table's). */
  streamSendTimeoutMs?: number;
  /** A generate_stream silent this long gets a keep-alive comment (default: the limits table's; 0: none). */
  sseKeepAliveMs?: number;
  /** Infer bodies and WebSocket messages this large are parsed on a parse worker (default: the limits table's threshold and compute-thread nice). */
  offThreadParse?: OffThreadParseOptions;
  /** The log and trace settings behind /v2/logging and /v2/trace/setting (shared with gRPC); fresh defaults when absent. */
  settings?: RuntimeSettings;
  /** Also serve GET /metrics on this port (the metrics port serves it regardless). */
  metrics?: MetricsExposition;
  /** Serve the built-in dashboard and playground at / and /ui/ (and record recent errors for it). */
  ui?: UiOptions;
}

/**
 * The HTTP port (src/server/kit/http-app.ts) with the front ends that need no API options: KServe
 * v2 (with Triton's generate extension), the WebSocket, GET /metrics and the UI. The OpenAI and
 * Anthropic routes go on it in startServer.
 */
export function createHttpApp(service: InferenceService, options: HttpAppOptions = {}): ReturnType<typeof createHttpServer> {
  const app = createHttpServer(options);
  if (options.ui) installRecentErrors(app, options.ui.errors);
  const settings = options.settings ?? createRuntimeSettings();
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const offThread = new OffThreadParser(options.offThreadParse ?? { minBytes: DEFAULT_LIMITS.offthreadJsonBytes, threadNice: DEFAULT_LIMITS.computeThreadNice });
  app.addHook('onClose', () => offThread.close());
  app.register(
    kserveRoutes(service, {
      bodyLimit,
      llm: options.llm,
      jsonMaxDepth: options.jsonMaxDepth,
      streamSendTimeoutMs: options.streamSendTimeoutMs,
      sseKeepAliveMs: options.sseKeepAliveMs,
      settings,
      offThread,
    }),
  );
  if (options.llm) app.register(websocketRoutes(options.llm, options.websocket, offThread));
  if (options.metrics) registerMetricsRoute(app, options.metrics);
  if (options.ui) registerUiRoutes(app, options.ui);
  return app;
}
