// Anthropic's error shape, `{"type":"error","error":{"type","message"}}`, for every failure under
// the Messages routes, with the statuses Anthropic's SDKs map onto their error classes. The
// catalog's codes (src/errors.ts) decide; only the spelling is Anthropic's. Every passing
// refusal (load shedding, a model coming or going, the server draining) is 529 overloaded_error,
// which is what Anthropic answers when it cannot take a request now and what its SDKs and
// Claude Code retry with backoff, honouring `retry-after`.

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ConveyorError, type ErrorCode } from '../src/errors.js';
import { retryAfterHeaders } from '../src/serving/admission.js';
import { RETRY_AFTER_SECONDS } from '../src/server/kit/errors.js';

export type AnthropicErrorType = 'invalid_request_error' | 'authentication_error' | 'permission_error' | 'not_found_error' | 'request_too_large' | 'overloaded_error' | 'timeout_error' | 'api_error';

export interface AnthropicErrorBody {
  readonly type: 'error';
  readonly error: { readonly type: AnthropicErrorType; readonly message: string };
}

export interface AnthropicFailure {
  readonly status: number;
  readonly body: AnthropicErrorBody;
  readonly headers: Readonly<Record<string, string>>;
}

/** Status and type per catalog code; UNSUPPORTED is a request this server cannot serve, so a 400 rather than a 501 no Anthropic client expects. */
const BY_CODE: Readonly<Record<ErrorCode, readonly [number, AnthropicErrorType]>> = {
  INVALID_ARG: [400, 'invalid_request_error'],
  CONTEXT_LENGTH_EXCEEDED: [400, 'invalid_request_error'],
  ALREADY_EXISTS: [400, 'invalid_request_error'],
  CANCELLED: [400, 'invalid_request_error'],
  UNSUPPORTED: [400, 'invalid_request_error'],
  UNAUTHENTICATED: [401, 'authentication_error'],
  PERMISSION_DENIED: [403, 'permission_error'],
  NOT_FOUND: [404, 'not_found_error'],
  UNAVAILABLE: [529, 'overloaded_error'],
  DEADLINE_EXCEEDED: [504, 'timeout_error'],
  INTERNAL: [500, 'api_error'],
};

export const OVERLOADED_STATUS = 529;

export function errorBody(type: AnthropicErrorType, message: string): AnthropicErrorBody {
  return { type: 'error', error: { type, message } };
}

/** Where a refusal names a field, Anthropic's messages lead with it. */
function withParam(error: ConveyorError): string {
  return error.param !== undefined && !error.message.includes(error.param) ? `${error.param}: ${error.message}` : error.message;
}

/** Any thrown value as an Anthropic error response. */
export function anthropicFailure(error: unknown): AnthropicFailure {
  if (error instanceof ConveyorError) {
    const [status, type] = BY_CODE[error.code];
    // Load shedding's wait (src/serving/admission.ts) wins over the fixed default.
    const own = retryAfterHeaders(error);
    const headers = status === OVERLOADED_STATUS ? { 'retry-after': String(RETRY_AFTER_SECONDS), ...own } : own;
    return { status, body: errorBody(type, withParam(error)), headers };
  }
  // fastify's own rejections: malformed JSON, body too large, unsupported media type.
  const status = (error as Partial<FastifyError>).statusCode;
  const message = error instanceof Error ? error.message : String(error);
  if (status === 413) return { status, body: errorBody('request_too_large', message), headers: {} };
  if (typeof status === 'number' && status >= 400 && status < 500) return { status, body: errorBody('invalid_request_error', message), headers: {} };
  return { status: 500, body: errorBody('api_error', message), headers: {} };
}

export function sendAnthropicError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const failure = anthropicFailure(error);
  if (failure.status >= 500 && failure.status !== OVERLOADED_STATUS) request.log.error({ err: error }, 'Anthropic request failed');
  return reply.code(failure.status).headers(failure.headers).type('application/json').send(failure.body);
}
