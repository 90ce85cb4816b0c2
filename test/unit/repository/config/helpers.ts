// Shared helpers for config tests: config.pbtxt text parsed as a model directory's, and
// assertions that errors are ConveyorErrors with an exact code and message.
import { expect } from 'vitest';
import type { ModelConfig } from '../../../../src/contracts/model-config.js';
import { ConveyorError, type ErrorCode } from '../../../../src/errors.js';
import { parseModelConfig } from '../../../../src/repository/config/index.js';

/** `text` as the config.pbtxt of model directory `dir` (errors name `config.pbtxt:line:col`), on a machine with `gpus` when given. */
export const parseConfig = (text: string, dir = 'm', gpus?: number[]): ModelConfig => parseModelConfig(text, 'config.pbtxt', dir, gpus ? { gpus } : {});

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
