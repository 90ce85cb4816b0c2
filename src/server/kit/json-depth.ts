// A linear scan for JSON nesting depth, run on the raw bytes before JSON.parse: V8 parses any
// depth, but everything after it (tensor flattening, schema validation, templates, serializers)
// recurses, and a body nested 100,000 deep would overflow the stack there. Brackets and quotes
// are ASCII, and UTF-8 never reuses ASCII byte values inside a multi-byte character, so bytes
// are scanned as they are.

import { invalidArg, type ConveyorError } from '../../errors.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

/** The deepest array/object nesting in `bytes[0, end)`, stopping early once past `limit`. */
export function jsonDepth(bytes: Uint8Array, limit: number, end = bytes.length): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < end; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    }
  }
  return deepest;
}

/** An INVALID_ARG when the JSON in `bytes[0, end)` nests deeper than `maxDepth`; undefined when it does not. */
export function jsonDepthError(bytes: Uint8Array, maxDepth: number, end = bytes.length): ConveyorError | undefined {
  if (end <= maxDepth) return undefined;
  return jsonDepth(bytes, maxDepth, end) > maxDepth ? invalidArg(`the JSON nests deeper than ${maxDepth} levels`) : undefined;
}
