// Failures every HTTP front end words alike. The plain shape, Triton's `{"error": "<message>"}`
// with the status the error catalog gives its code, answers the KServe routes and anything on
// the app outside a front end's own plugin (a refused /v1/ws upgrade); fastify's own errors (body
// too large, bad media type) keep their 4xx status. Load shedding (the serving layer's
// Overloaded) is a 503 that also says when to come back, in `retry-after` / `retry-after-ms`.
// Why a model a request names is not served, and the wait after a 503, are the same for the
// OpenAI and Anthropic routes; each spells them in its own error shape.

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ConveyorError, serverDraining } from '../../errors.js';
import type { ConveyorService } from '../../serving/conveyor-service.js';
import { Overloaded, retryAfterHeaders } from '../../serving/admission.js';

export interface HttpFailure {
  readonly status: number;
  readonly message: string;
}

export function httpFailure(error: unknown): HttpFailure {
  if (error instanceof ConveyorError) return { status: error.httpStatus, message: error.message };
  const status = (error as Partial<FastifyError>).statusCode;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof status === 'number' && status >= 400 && status < 500) return { status, message };
  return { status: 500, message };
}

export function sendFailure(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const failure = httpFailure(error);
  if (failure.status >= 500 && !(error instanceof Overloaded)) request.log.error({ err: error }, 'request failed');
  return reply.code(failure.status).headers(retryAfterHeaders(error)).type('application/json').send({ error: failure.message });
}

/** OpenAI's own answer names no `param` for an unknown model, only the code. */
export function modelNotFound(model: string): ConveyorError {
  return new ConveyorError('NOT_FOUND', `The model \`${model}\` does not exist or is not loaded.`);
}

/** A model being loaded, unloaded or reloaded: 503, which SDKs retry, where 404 would end the client's attempts. */
export function modelChanging(model: string): ConveyorError {
  return new ConveyorError('UNAVAILABLE', `The model \`${model}\` is being loaded or unloaded; retry the request shortly.`);
}

/**
 * Why a model the request names is not served: the server is draining or the model is coming or
 * going (503, retryable), or it does not exist (404 model_not_found).
 */
export function missingModel(service: ConveyorService, name: string): ConveyorError {
  if (service.draining) return serverDraining();
  if (service.modelChanging(name)) return modelChanging(name);
  return modelNotFound(name);
}

/**
 * Seconds a client should wait after a 503. Every 503 is a passing state (load shedding, a model
 * coming or going, the server draining), and OpenAI's SDKs back off on `retry-after`.
 */
export const RETRY_AFTER_SECONDS = 1;
