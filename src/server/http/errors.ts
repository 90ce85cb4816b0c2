// Every failure leaves the KServe routes as Triton's `{"error": "<message>"}` with the status
// the error catalog gives its code; fastify's own errors (body too large, bad media type) keep
// their 4xx status. Load shedding (the serving layer's Overloaded) is a 503 that also says when
// to come back, in `retry-after` / `retry-after-ms`.

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ConveyorError } from '../../errors.js';
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
