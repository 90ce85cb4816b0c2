// The error catalog: every error the server raises has one code, and each code maps once to an
// HTTP status, a gRPC status and an OpenAI error type. Front ends never invent statuses.

export type ErrorCode =
  | 'INVALID_ARG'
  | 'NOT_FOUND'
  | 'UNAVAILABLE'
  | 'INTERNAL'
  | 'UNSUPPORTED'
  | 'ALREADY_EXISTS'
  | 'CANCELLED'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'CONTEXT_LENGTH_EXCEEDED'
  | 'DEADLINE_EXCEEDED';

interface CatalogEntry {
  readonly http: number;
  /** @grpc/grpc-js `status` numbers (kept as numbers so this file needs no gRPC import). */
  readonly grpc: number;
  readonly openaiType: string;
  /** OpenAI's string `code`, where it has one. */
  readonly openaiCode: string | null;
}

// gRPC status codes (grpc/status.h).
const GRPC = {
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

export const ERROR_CATALOG: Readonly<Record<ErrorCode, CatalogEntry>> = {
  // Triton answers 400 for an unknown model too; NOT_FOUND is for missing versions/resources.
  INVALID_ARG: { http: 400, grpc: GRPC.INVALID_ARGUMENT, openaiType: 'invalid_request_error', openaiCode: null },
  NOT_FOUND: { http: 404, grpc: GRPC.NOT_FOUND, openaiType: 'invalid_request_error', openaiCode: 'model_not_found' },
  UNAVAILABLE: { http: 503, grpc: GRPC.UNAVAILABLE, openaiType: 'server_error', openaiCode: 'service_unavailable' },
  INTERNAL: { http: 500, grpc: GRPC.INTERNAL, openaiType: 'server_error', openaiCode: null },
  UNSUPPORTED: { http: 501, grpc: GRPC.UNIMPLEMENTED, openaiType: 'invalid_request_error', openaiCode: 'unsupported' },
  ALREADY_EXISTS: { http: 400, grpc: GRPC.ALREADY_EXISTS, openaiType: 'invalid_request_error', openaiCode: null },
  CANCELLED: { http: 400, grpc: GRPC.CANCELLED, openaiType: 'invalid_request_error', openaiCode: 'cancelled' },
  UNAUTHENTICATED: { http: 401, grpc: GRPC.UNAUTHENTICATED, openaiType: 'authentication_error', openaiCode: 'invalid_api_key' },
  // A valid key without the rights the route needs (an API key on a control route).
  PERMISSION_DENIED: { http: 403, grpc: GRPC.PERMISSION_DENIED, openaiType: 'permission_error', openaiCode: 'permission_denied' },
  CONTEXT_LENGTH_EXCEEDED: { http: 400, grpc: GRPC.INVALID_ARGUMENT, openaiType: 'invalid_request_error', openaiCode: 'context_length_exceeded' },
  // A request stopped by the server's own time limit (--max-request-secs).
  DEADLINE_EXCEEDED: { http: 504, grpc: GRPC.DEADLINE_EXCEEDED, openaiType: 'server_error', openaiCode: 'timeout' },
};

export class ConveyorError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** The request field at fault (OpenAI's `param`). */
    readonly param?: string,
  ) {
    super(message);
    this.name = 'ConveyorError';
  }

  get httpStatus(): number {
    return ERROR_CATALOG[this.code].http;
  }

  /** Fastify's name for the HTTP status: a ConveyorError thrown in any hook answers correctly. */
  get statusCode(): number {
    return this.httpStatus;
  }

  get grpcStatus(): number {
    return ERROR_CATALOG[this.code].grpc;
  }
}

/**
 * session.run refused the inputs of an execution (the model is loaded and its instance alive):
 * the content of the batch failed, so the batcher can isolate the request at fault.
 */
export class ExecutionRejected extends ConveyorError {
  constructor(message: string) {
    super('INTERNAL', message);
    this.name = 'ExecutionRejected';
  }
}

/** Any thrown value as a ConveyorError (unknown failures become INTERNAL). */
export function asConveyorError(error: unknown): ConveyorError {
  if (error instanceof ConveyorError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ConveyorError('INTERNAL', message);
}

export const invalidArg = (message: string, param?: string): ConveyorError => new ConveyorError('INVALID_ARG', message, param);
export const notFound = (message: string): ConveyorError => new ConveyorError('NOT_FOUND', message);
export const unavailable = (message: string): ConveyorError => new ConveyorError('UNAVAILABLE', message);

/** A new request while the server drains for shutdown: retryable, on another replica or after the restart. */
export const serverDraining = (): ConveyorError => unavailable('the server is shutting down and accepts no new requests; retry on another replica or after the restart');

/** A generation still running when the shutdown's exit timeout ended it (its blocks are freed). */
export const cutByShutdown = (): ConveyorError => unavailable('the server shut down before the generation finished (exit timeout reached); retry the request');
