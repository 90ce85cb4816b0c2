// Errors → gRPC status through the catalog (src/errors.ts): front ends never invent statuses.

import type { status, ServerErrorResponse, StatusObject } from '@grpc/grpc-js';
import { asConveyorError, ConveyorError } from '../../errors.js';

export function toGrpcStatus(error: unknown): Partial<StatusObject> & ServerErrorResponse {
  const conveyor = asConveyorError(error);
  return Object.assign(new Error(conveyor.message), { code: conveyor.grpcStatus as status, details: conveyor.message });
}

export function cancelledError(): ConveyorError {
  return new ConveyorError('CANCELLED', 'the client cancelled the request');
}

export function unsupported(rpc: string): ConveyorError {
  return new ConveyorError('UNSUPPORTED', `${rpc} is not supported by this server`);
}
