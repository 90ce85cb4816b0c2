// Helpers shared by the HTTP codec tests.
import { ConveyorError } from '../../../../src/errors.js';

/** The ConveyorError `fn` throws (fails the test when it throws nothing or something else). */
export function errorOf(fn: () => unknown): ConveyorError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConveyorError) return error;
    throw error;
  }
  throw new Error('expected a ConveyorError');
}

export async function asyncErrorOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Error) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

/** Little-endian bytes of values in the given typed array type. */
export function bytesOf(data: ArrayBufferView): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** BYTES elements framed as the binary tensor data extension frames them. */
export function framed(...elements: string[]): Buffer {
  return Buffer.concat(
    elements.map((e) => {
      const bytes = Buffer.from(e, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32LE(bytes.byteLength);
      return Buffer.concat([length, bytes]);
    }),
  );
}
