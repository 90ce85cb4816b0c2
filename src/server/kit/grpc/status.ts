// Errors → gRPC status through the catalog (src/errors.ts): front ends never invent statuses.

import { Metadata, type status, type ServerErrorResponse, type StatusObject } from '@grpc/grpc-js';
import { asConveyorError, ConveyorError } from '../../../errors.js';
import { Overloaded } from '../../../serving/admission.js';

export function toGrpcStatus(error: unknown): Partial<StatusObject> & ServerErrorResponse {
  const conveyor = asConveyorError(error);
  return Object.assign(new Error(conveyor.message), { code: conveyor.grpcStatus as status, details: conveyor.message });
}

/**
 * The catalog's status with the error code and the field at fault as trailing metadata; load
 * shedding (Overloaded, UNAVAILABLE) also says when to come back: `grpc-retry-pushback-ms`, which
 * a gRPC client's retry policy honours (gRFC A6), and `retry-after-ms` for code that reads it.
 */
export function toGrpcStatusWithDetails(error: unknown): ReturnType<typeof toGrpcStatus> & { metadata: Metadata } {
  const conveyor = asConveyorError(error);
  const metadata = new Metadata();
  metadata.set('conveyor-error-code', conveyor.code.toLowerCase());
  if (conveyor.param) metadata.set('conveyor-error-param', conveyor.param);
  if (conveyor instanceof Overloaded) {
    metadata.set('grpc-retry-pushback-ms', String(conveyor.retryAfter.ms));
    metadata.set('retry-after-ms', String(conveyor.retryAfter.ms));
  }
  return Object.assign(toGrpcStatus(conveyor), { metadata });
}

export function cancelledError(): ConveyorError {
  return new ConveyorError('CANCELLED', 'the client cancelled the request');
}

export function unsupported(rpc: string): ConveyorError {
  return new ConveyorError('UNSUPPORTED', `${rpc} is not supported by this server`);
}
