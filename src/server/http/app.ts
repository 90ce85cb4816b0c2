// The KServe v2 / Triton HTTP front end as a fastify app. The KServe routes live in their own
// encapsulated plugin: their raw-body parser, error shape and response compression must not
// leak into routes other front ends (OpenAI, WebSocket) register on the same app.

import Fastify from 'fastify';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { InferenceService } from '../../contracts/inference-service.js';
import { AccessPolicy } from '../../security/access-policy.js';
import type { LlmLookup } from '../generation/lookup.js';
import { installAccessControl } from './access.js';
import { installModelLeases, type ModelLeases } from './model-leases.js';
import { sendFailure } from './errors.js';
import { registerGenerateRoutes } from './routes/generate.js';
import { registerInferRoutes } from './routes/infer.js';
import { registerMetricsRoute, type MetricsExposition } from './routes/metrics.js';
import { registerModelRoutes } from './routes/models.js';
import { registerRepositoryRoutes } from './routes/repository.js';
import { registerServerRoutes } from './routes/server.js';
import { registerSettingsRoutes, registerSharedMemoryRoutes } from './routes/settings.js';
import { registerUiRoutes, type UiOptions } from './routes/ui.js';
import { installRecentErrors } from './recent-errors.js';
import { createRuntimeSettings, type RuntimeSettings } from '../../config/runtime-settings.js';
import { chooseResponseCoding, compress, decodeContentEncoding } from './transport.js';
import { websocketRoutes, type WebSocketOptions } from './websocket/routes.js';
import { DEFAULT_LIMITS } from '../../config/limits.js';
import { HEADER_LENGTH_HEADER } from './codec/infer-request.js';
import { jsonDepthError } from './codec/json-depth.js';
import { applyConnectionCap, connectionServerOptions, type ConnectionLimits } from './connection-limits.js';
import { ProbeQuietLogController } from './probe-logging.js';

/** Image batches as binary tensors are large; Triton itself has no fixed limit. */
export const DEFAULT_BODY_LIMIT = 256 * 1024 * 1024;

export interface HttpAppOptions {
  /** fastify's `logger` option. */
  logger?: boolean | object;
  /** Largest request body in bytes, after decompression. */
  bodyLimit?: number;
  /** The LLMs behind Triton's generate extension and the /v1/ws WebSocket; without it neither is served. */
  llm?: LlmLookup;
  /** Limits of /v1/ws (its upgrade is guarded like every route: access.ts). */
  websocket?: WebSocketOptions;
  /** Who may call which route, including routes registered on the app later; default: everyone. */
  access?: AccessPolicy;
  /** Header, request and idle timeouts and the connection cap; Node's and fastify's defaults when absent. */
  connections?: ConnectionLimits;
  /** Deepest JSON nesting a KServe body may have (default 64). */
  jsonMaxDepth?: number;
  /** A generate_stream client that reads nothing this long is dropped (default: the limits table's). */
  streamSendTimeoutMs?: number;
  /** The log and trace settings behind /v2/logging and /v2/trace/setting (shared with gRPC); fresh defaults when absent. */
  settings?: RuntimeSettings;
  /** Leases on the model each request runs (loads on demand, idle unload); absent, none are taken. */
  modelLeases?: ModelLeases;
  /** Also serve GET /metrics on this port (the metrics port serves it regardless). */
  metrics?: MetricsExposition;
  /** Serve the built-in dashboard and playground at / and /ui/ (and record recent errors for it). */
  ui?: UiOptions;
}

export function createHttpApp(service: InferenceService, options: HttpAppOptions = {}): FastifyInstance {
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const app = Fastify({
    logger: (options.logger ?? false) as FastifyServerOptions['logger'],
    logController: new ProbeQuietLogController(),
    bodyLimit,
    // A client's X-Request-Id becomes the request id in every log line about the request.
    requestIdHeader: 'x-request-id',
    ...(options.connections ? connectionServerOptions(options.connections) : {}),
  });
  if (options.connections) {
    const { httpMaxConnections } = options.connections;
    applyConnectionCap(app.server, options.connections, () => app.log.warn(`refused a connection: --http-max-connections (${httpMaxConnections}) reached`));
  }
  installAccessControl(app, options.access ?? AccessPolicy.open());
  if (options.ui) installRecentErrors(app, options.ui.errors);
  const settings = options.settings ?? createRuntimeSettings();
  if (options.modelLeases) installModelLeases(app, options.modelLeases);
  app.register(kserveRoutes(service, { bodyLimit, llm: options.llm, jsonMaxDepth: options.jsonMaxDepth, streamSendTimeoutMs: options.streamSendTimeoutMs, settings }));
  if (options.llm) app.register(websocketRoutes(options.llm, options.websocket));
  if (options.metrics) registerMetricsRoute(app, options.metrics);
  if (options.ui) registerUiRoutes(app, options.ui);
  // Errors outside the front ends' own plugins (a refused /v1/ws upgrade) in Triton's shape too.
  app.setErrorHandler((error, request, reply) => sendFailure(error, request, reply));
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ error: `no route for ${request.method} ${request.url}` }));
  return app;
}

/** The KServe v2 routes as a plugin, for composing into an app built elsewhere. */
export function kserveRoutes(
  service: InferenceService,
  options: { bodyLimit: number; llm?: LlmLookup | undefined; jsonMaxDepth?: number | undefined; streamSendTimeoutMs?: number | undefined; settings?: RuntimeSettings | undefined },
): FastifyPluginAsync {
  return async (app) => {
    installRawBodyParser(app, options.bodyLimit, options.jsonMaxDepth ?? DEFAULT_LIMITS.jsonMaxDepth);
    app.setErrorHandler((error, request, reply) => sendFailure(error, request, reply));
    registerServerRoutes(app, service);
    registerModelRoutes(app, service);
    registerRepositoryRoutes(app, service);
    registerSettingsRoutes(app, service, options.settings ?? createRuntimeSettings());
    registerSharedMemoryRoutes(app);
    // Only inference answers are compressed, as Triton does: tritonclient.http.aio reads every
    // other answer with decompression off, so a gzip'd metadata body would be unreadable there.
    await app.register(async (inference) => {
      inference.addHook('onSend', compressResponse);
      registerInferRoutes(inference, service);
      if (options.llm) registerGenerateRoutes(inference, options.llm, options.streamSendTimeoutMs);
    });
  };
}

// Only successful bodies: tritonclient reads error bodies without decompressing them.
async function compressResponse(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (reply.statusCode !== 200 || !(typeof payload === 'string' || Buffer.isBuffer(payload)) || payload.length === 0) {
    return payload;
  }
  const coding = chooseResponseCoding(request.headers['accept-encoding']);
  if (coding === undefined) return payload;
  reply.header('content-encoding', coding).header('vary', 'accept-encoding');
  return compress(payload, coding);
}

// tritonclient sends no Content-Type, other clients send anything; KServe bodies are always
// read as raw bytes, so every content type (and none) goes to one Buffer parser.
function installRawBodyParser(app: FastifyInstance, bodyLimit: number, jsonMaxDepth: number): void {
  app.addHook('onRequest', async (request) => {
    // A malformed Content-Type would otherwise be refused (415) before the parser runs.
    if (request.headers['content-type'] !== undefined) request.raw.headers['content-type'] = 'application/octet-stream';
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, async (request: { headers: Record<string, unknown> }, body: Buffer) => {
    const decoded = await decodeContentEncoding(body, request.headers['content-encoding'] as string | undefined, bodyLimit);
    const tooDeep = jsonDepthError(decoded, jsonMaxDepth, jsonHeaderEnd(request.headers[HEADER_LENGTH_HEADER], decoded.byteLength));
    if (tooDeep) throw tooDeep;
    return decoded;
  });
}

// Where a body's JSON ends: Inference-Header-Content-Length when it is a usable number (the
// route itself reports a bad one), else the whole body.
function jsonHeaderEnd(headerLength: unknown, bodyLength: number): number {
  const n = typeof headerLength === 'string' && /^\d+$/.test(headerLength.trim()) ? Number(headerLength.trim()) : bodyLength;
  return Math.min(n, bodyLength);
}
