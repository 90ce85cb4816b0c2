// The KServe v2 / Triton HTTP front end: /v2 (health, metadata, infer, repository, statistics,
// settings, shared memory, Triton's generate extension) as one encapsulated fastify plugin on
// the HTTP port (src/server/kit/http-app.ts): its raw-body parser, error shape and response
// compression must not leak into routes other front ends (OpenAI, WebSocket) register there.

import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { InferenceService } from '../../contracts/inference-service.js';
import type { LlmLookup } from '../generation/lookup.js';
import { sendFailure } from '../kit/errors.js';
import { registerGenerateRoutes } from './routes/generate.js';
import { registerInferRoutes } from './routes/infer.js';
import { registerModelRoutes } from './routes/models.js';
import { registerRepositoryRoutes } from './routes/repository.js';
import { registerServerRoutes } from './routes/server.js';
import { registerSettingsRoutes, registerSharedMemoryRoutes } from './routes/settings.js';
import { createRuntimeSettings, type RuntimeSettings } from '../../config/runtime-settings.js';
import { chooseResponseCoding, compress, decodeContentEncoding } from '../kit/transport.js';
import { DEFAULT_LIMITS } from '../../config/limits.js';
import { HEADER_LENGTH_HEADER } from './codec/infer-request.js';
import { jsonDepthError } from '../kit/json-depth.js';
import type { OffThreadParser } from '../kit/offthread-parse.js';

/** Register with `app.register(kserveRoutes(service, options))` on the HTTP app. */
export function kserveRoutes(
  service: InferenceService,
  options: {
    bodyLimit: number;
    llm?: LlmLookup | undefined;
    jsonMaxDepth?: number | undefined;
    streamSendTimeoutMs?: number | undefined;
    /** A generate_stream silent this long gets a keep-alive comment (0: none). */
    sseKeepAliveMs?: number | undefined;
    settings?: RuntimeSettings | undefined;
    /** Parses infer bodies past its threshold off the serving thread (src/server/kit/offthread-parse.ts). */
    offThread?: OffThreadParser | undefined;
  },
): FastifyPluginAsync {
  return async (app) => {
    const jsonMaxDepth = options.jsonMaxDepth ?? DEFAULT_LIMITS.jsonMaxDepth;
    installRawBodyParser(app, options.bodyLimit, jsonMaxDepth, options.offThread);
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
      registerInferRoutes(inference, service, { offThread: options.offThread, jsonMaxDepth });
      if (options.llm)
        registerGenerateRoutes(
          inference,
          options.llm,
          {
            sendTimeoutMs: options.streamSendTimeoutMs ?? DEFAULT_LIMITS.streamSendTimeoutSecs * 1000,
            keepAliveMs: options.sseKeepAliveMs ?? DEFAULT_LIMITS.sseKeepAliveIntervalSecs * 1000,
          },
          service,
        );
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
// An infer body the parse worker will take is depth-checked there: the scan alone is ~5 ms a MB.
function installRawBodyParser(app: FastifyInstance, bodyLimit: number, jsonMaxDepth: number, offThread: OffThreadParser | undefined): void {
  app.addHook('onRequest', async (request) => {
    // A malformed Content-Type would otherwise be refused (415) before the parser runs.
    if (request.headers['content-type'] !== undefined) request.raw.headers['content-type'] = 'application/octet-stream';
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, async (request: FastifyRequest, body: Buffer) => {
    const decoded = await decodeContentEncoding(body, request.headers['content-encoding'], bodyLimit);
    const jsonEnd = jsonHeaderEnd(request.headers[HEADER_LENGTH_HEADER], decoded.byteLength);
    if (offThread?.wants(jsonEnd) && request.routeOptions.url?.endsWith('/infer')) return decoded;
    const tooDeep = jsonDepthError(decoded, jsonMaxDepth, jsonEnd);
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
