// POST /v2/models/{m}[/versions/{v}]/infer: body → InferRequest → service.infer → body.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { InferRequest, InferResponse } from '../../../contracts/infer.js';
import type { InferenceService } from '../../../contracts/inference-service.js';
import { classify } from '../../../serving/classification.js';
import { decodeInferRequest, HEADER_LENGTH_HEADER, parseHeaderLength } from '../codec/infer-request.js';
import { binaryOutputChooser, encodeInferResponse } from '../codec/infer-response.js';
import { asCount } from '../codec/json-body.js';
import { decodeRawInferRequest } from '../codec/raw-request.js';
import { abortOnDisconnect } from '../transport.js';
import { modelPaths, versionOf } from './models.js';
import type { ModelParams } from './models.js';

/** Class labels of a model output (its label_filename), when it has any. */
export type LabelLookup = (model: string, version: string, output: string) => readonly string[] | undefined;

export interface InferRouteOptions {
  readonly labels?: LabelLookup | undefined;
}

export function registerInferRoutes(app: FastifyInstance, service: InferenceService, options: InferRouteOptions): void {
  for (const path of modelPaths('/infer')) {
    app.post<{ Params: ModelParams }>(path, (request, reply) => handleInfer(service, options, request, reply));
  }
}

async function handleInfer(
  service: InferenceService,
  options: InferRouteOptions,
  request: FastifyRequest<{ Params: ModelParams }>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const inferRequest = decodeBody(service, request);
  const signal = abortOnDisconnect(reply.raw);
  const response = await service.infer(inferRequest, signal);
  const classified = classifyLeftovers(service, options, inferRequest, response);
  const encoded = encodeInferResponse(classified, binaryOutputChooser(inferRequest));
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

/**
 * The service applies `classification` itself (labels live with the model); an output that
 * still comes back numeric was not classified there, so it is classified here.
 */
function classifyLeftovers(
  service: InferenceService,
  options: InferRouteOptions,
  request: InferRequest,
  response: InferResponse,
): InferResponse {
  const topK = new Map<string, number>();
  for (const output of request.outputs ?? []) {
    const k = asCount(output.parameters.classification);
    if (k !== undefined) topK.set(output.name, k);
  }
  const pending = response.outputs.filter((t) => topK.has(t.name) && t.datatype !== 'BYTES');
  if (pending.length === 0) return response;
  const batched = service.modelConfig(response.model, response.version).max_batch_size > 0;
  const outputs = response.outputs.map((tensor) => {
    const k = topK.get(tensor.name);
    if (k === undefined || tensor.datatype === 'BYTES') return tensor;
    return classify(tensor, k, options.labels?.(response.model, response.version, tensor.name), batched);
  });
  return { ...response, outputs };
}
