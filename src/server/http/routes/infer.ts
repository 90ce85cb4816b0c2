// POST /v2/models/{m}[/versions/{v}]/infer: body → InferRequest → service.infer → body.
// Requested-output parameters (binary_data, classification) travel to the service untouched;
// the service applies classification, where the model's labels live. A JSON body past
// --offthread-json-bytes is decoded on a parse worker (src/server/kit/offthread-parse.ts).

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { InferRequest, InferResponse } from '../../../contracts/infer.js';
import type { InferenceService } from '../../../contracts/inference-service.js';
import { decodeInferRequest, HEADER_LENGTH_HEADER, parseHeaderLength } from '../codec/infer-request.js';
import { binaryOutputChooser, encodeInferResponse } from '../codec/infer-response.js';
import { decodeRawInferRequest } from '../codec/raw-request.js';
import { OFFTHREAD_INFER_MODULE, type OffThreadInferInput } from '../codec/offthread-infer.js';
import { abortOnDisconnect } from '../../kit/transport.js';
import { movable, type OffThreadParser } from '../../kit/offthread-parse.js';
import { modelPaths, versionOf } from './models.js';
import type { ModelParams } from './models.js';

export interface InferRouteOptions {
  /** Parses large JSON bodies off the serving thread; absent, every body is parsed in place. */
  readonly offThread?: OffThreadParser | undefined;
  /** --json-max-depth, checked on the worker for the bodies the body parser left to it. */
  readonly jsonMaxDepth: number;
}

export function registerInferRoutes(app: FastifyInstance, service: InferenceService, options: InferRouteOptions): void {
  for (const path of modelPaths('/infer')) {
    app.post<{ Params: ModelParams }>(path, (request, reply) => handleInfer(service, options, request, reply));
  }
}

async function handleInfer(service: InferenceService, options: InferRouteOptions, request: FastifyRequest<{ Params: ModelParams }>, reply: FastifyReply): Promise<FastifyReply> {
  const inferRequest = await decodeBody(service, options, request);
  const signal = abortOnDisconnect(reply.raw);
  const response = withRequestId(await service.infer(inferRequest, signal), inferRequest);
  const encoded = encodeInferResponse(response, binaryOutputChooser(inferRequest));
  reply.code(200).header('content-type', encoded.contentType);
  if (encoded.headerLength !== undefined) reply.header(HEADER_LENGTH_HEADER, encoded.headerLength);
  return reply.send(encoded.body);
}

async function decodeBody(service: InferenceService, options: InferRouteOptions, request: FastifyRequest<{ Params: ModelParams }>): Promise<InferRequest> {
  const { model } = request.params;
  const version = versionOf(request.params);
  const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  const headerLength = parseHeaderLength(request.headers[HEADER_LENGTH_HEADER], body.byteLength);
  if (headerLength === 0) return decodeRawInferRequest(model, version, service.modelConfig(model, version), body);
  const { offThread } = options;
  if (!offThread?.wants(headerLength ?? body.byteLength)) return decodeInferRequest(model, version, body, headerLength);
  const { bytes, transfer } = movable(body);
  const input: OffThreadInferInput = { model, version, body: bytes, headerLength, maxDepth: options.jsonMaxDepth };
  return offThread.run<InferRequest>(OFFTHREAD_INFER_MODULE, input, transfer);
}

// Triton always echoes the request id, whether or not the core carried it through.
function withRequestId(response: InferResponse, request: InferRequest): InferResponse {
  return request.id !== undefined && response.id === undefined ? { ...response, id: request.id } : response;
}
