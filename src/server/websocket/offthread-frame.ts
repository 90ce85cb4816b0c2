// A client frame read on the parse worker (src/server/kit/offthread-parse.ts) when it is past
// --offthread-json-bytes: the depth check and parseClientMessage, the same code and the same
// errors as the inline path. A frame that fails comes back as its error and the id it names,
// so the session answers it exactly as it answers a small bad frame.

import type { OffThreadAnswer, WireError } from '../kit/offthread-parse.js';
import { asConveyorError, ConveyorError } from '../../errors.js';
import { jsonDepthError } from '../kit/json-depth.js';
import { parseClientMessage, peekId, type ClientMessage } from './messages.js';

/** This module, for OffThreadParser.run. */
export const OFFTHREAD_FRAME_MODULE = new URL('./offthread-frame.ts', import.meta.url);

export interface OffThreadFrameInput {
  readonly bytes: Uint8Array;
  readonly maxDepth: number;
}

/** A frame read: its message, or why it was refused and the id it names (when one can be read). */
export type ReadFrame = { readonly message: ClientMessage } | { readonly error: unknown; readonly id?: string | undefined };

/** The inline path, shared by both threads. */
export function readFrame(bytes: Uint8Array, maxDepth: number): ReadFrame {
  const tooDeep = jsonDepthError(bytes, maxDepth);
  if (tooDeep) return { error: tooDeep };
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  try {
    return { message: parseClientMessage(text) };
  } catch (error) {
    return { error, id: peekId(text) };
  }
}

type WireFrame = { readonly message: ClientMessage } | { readonly error: WireError; readonly id?: string | undefined };

export function parseOffThread(input: OffThreadFrameInput): OffThreadAnswer<WireFrame> {
  const read = readFrame(input.bytes, input.maxDepth);
  if ('message' in read) return { value: read, transfer: [] };
  const { code, message, param } = asConveyorError(read.error);
  return { value: { error: { code, message, ...(param !== undefined ? { param } : {}) }, id: read.id }, transfer: [] };
}

/** A worker's answer as the inline path would have given it. */
export function fromWire(frame: WireFrame): ReadFrame {
  if ('message' in frame) return frame;
  return { error: new ConveyorError(frame.error.code, frame.error.message, frame.error.param), id: frame.id };
}
