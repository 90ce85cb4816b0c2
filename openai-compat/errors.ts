// OpenAI's error shape, `{"error":{"message","type","param","code"}}` with all four keys, for
// every failure under the OpenAI routes. Statuses and types come from the error catalog
// (src/errors.ts); the few codes that only make sense in OpenAI's vocabulary (a parameter this
// server does not support, one it does not know) are carried by OpenAIRequestError.

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ConveyorError, ERROR_CATALOG, type ErrorCode } from '../src/errors.js';
import { retryAfterHeaders } from '../src/serving/admission.js';
import { RETRY_AFTER_SECONDS } from '../src/server/kit/errors.js';

export interface OpenAIErrorBody {
  readonly error: {
    readonly message: string;
    readonly type: string;
    readonly param: string | null;
    readonly code: string | null;
  };
}

/** A ConveyorError whose OpenAI `code` differs from its catalog entry's, plus response headers. */
export class OpenAIRequestError extends ConveyorError {
  constructor(
    code: ErrorCode,
    message: string,
    param: string | undefined,
    readonly openaiCode: string | null,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(code, message, param);
  }
}

/** A parameter OpenAI defines that this server cannot honour; refused rather than ignored. */
export function unsupportedParameter(param: string, why = 'is not supported by this server'): OpenAIRequestError {
  return new OpenAIRequestError('INVALID_ARG', `Unsupported parameter: '${param}' ${why}.`, param, 'unsupported_parameter');
}

/** A field neither OpenAI nor the vLLM extensions define (OpenAI answers these with 400 too). */
export function unknownParameter(param: string): OpenAIRequestError {
  return new OpenAIRequestError('INVALID_ARG', `Unrecognized request argument supplied: ${param}`, param, 'unknown_parameter');
}

export interface OpenAIFailure {
  readonly status: number;
  readonly body: OpenAIErrorBody;
  readonly headers: Readonly<Record<string, string>>;
}

function body(message: string, type: string, param: string | null, code: string | null): OpenAIErrorBody {
  return { error: { message, type, param, code } };
}

/** Any thrown value as an OpenAI error response. */
export function openaiFailure(error: unknown): OpenAIFailure {
  if (error instanceof ConveyorError) {
    const entry = ERROR_CATALOG[error.code];
    const code = error instanceof OpenAIRequestError ? error.openaiCode : entry.openaiCode;
    const headers = { ...(entry.http === 503 ? { 'retry-after': String(RETRY_AFTER_SECONDS) } : {}), ...(error instanceof OpenAIRequestError ? error.headers : {}), ...retryAfterHeaders(error) };
    return { status: entry.http, body: body(error.message, entry.openaiType, error.param ?? null, code), headers };
  }
  // fastify's own rejections: malformed JSON, body too large, unsupported media type.
  const status = (error as Partial<FastifyError>).statusCode;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { status, body: body(message, 'invalid_request_error', null, null), headers: {} };
  }
  return { status: 500, body: body(message, 'server_error', null, null), headers: {} };
}

export function sendOpenAIError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const failure = openaiFailure(error);
  if (failure.status >= 500 && failure.status !== 503) request.log.error({ err: error }, 'OpenAI request failed');
  return reply.code(failure.status).headers(failure.headers).type('application/json').send(failure.body);
}
