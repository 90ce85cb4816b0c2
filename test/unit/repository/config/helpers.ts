// Shared assertions for config tests: errors are ConveyorErrors with an exact code and message.
import { expect } from 'vitest';
import { ConveyorError, type ErrorCode } from '../../../../src/errors.js';

export function errorOf(fn: () => unknown): ConveyorError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConveyorError);
    return error as ConveyorError;
  }
  throw new Error('expected an error');
}

export function expectError(fn: () => unknown, message: string, code: ErrorCode = 'INVALID_ARG'): void {
  const error = errorOf(fn);
  expect(error.message).toBe(message);
  expect(error.code).toBe(code);
}

export async function expectRejection(promise: Promise<unknown>, message: string, code: ErrorCode = 'INVALID_ARG'): Promise<void> {
  const error = await promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConveyorError);
  expect((error as ConveyorError).message).toBe(message);
  expect((error as ConveyorError).code).toBe(code);
}
