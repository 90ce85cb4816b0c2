// POST /v2/models/{m}[/versions/{v}]/infer: body → InferRequest → service.infer → body.
// Requested-output parameters (binary_data, classification) travel to the service untouched;
// the service applies classification, where the model's labels live.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { InferRequest, InferResponse } from '../../../contracts/infer.js';
import type { InferenceService } from '../../../contracts/inference-service.js';
import { decodeInferRequest, HEADER_LENGTH_HEADER, parseHeaderLength } from '../codec/infer-request.js';
import { binaryOutputChooser, encodeInferResponse } from '../codec/infer-response.js';
import { decodeRawInferRequest } from '../codec/raw-request.js';
import { abortOnDisconnect } from '../../kit/transport.js';
import { modelPaths, versionOf } from './models.js';
import type { ModelParams } from './models.js';

export function registerInferRoutes(app: FastifyInstance, service: InferenceService): void {
  for (const path of modelPaths('/infer')) {
    app.post<{ Params: ModelParams }>(path, (request, reply) => handleInfer(service, request, reply));
  }
}

async function handleInfer(service: InferenceService, request: FastifyRequest<{ Params: ModelParams }>, reply: FastifyReply): Promise<FastifyReply> {
  const inferRequest = decodeBody(service, request);
  const signal = abortOnDisconnect(reply.raw);
  const response = withRequestId(await service.infer(inferRequest, signal), inferRequest);
  const encoded = encodeInferResponse(response, binaryOutputChooser(inferRequest));
  reply.code(200).header('content-type', encoded.contentType);
  if (encoded.headerLength !== undefined) reply.header(HEADER_LENGTH_HEADER, encoded.headerLength);
  return reply.send(encoded.body);
}

function decodeBody(service: InferenceService, request: FastifyRequest<{ Params: ModelParams }>): InferRequest {
  const { model } = request.params;
  const version = versionOf(request.params);
  const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  const headerLength = parseHeaderLength(request.headers[HEADER_LENGTH_HEADER], body.byteLength);
  if (headerLength === 0) return decodeRawInferRequest(model, version, service.modelConfig(model, version), body);
  return decodeInferRequest(model, version, body, headerLength);
}

// Triton always echoes the request id, whether or not the core carried it through.
function withRequestId(response: InferResponse, request: InferRequest): InferResponse {
  return request.id !== undefined && response.id === undefined ? { ...response, id: request.id } : response;
}
