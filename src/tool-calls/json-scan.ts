// The small pieces of JSON reading the tool-call formats share: the head of a call object
// (`{"name": "...", "arguments":`), the extent of a JSON value as far as the text goes, and the
// end of the object around it. They read text that may still be growing (a stream), so each
// answers "as far as the text goes" and never looks past `limit`.

import type { ParsedToolCall } from '../contracts/tools.js';

const WHITESPACE = /\s/;

export function skipWhitespace(text: string, pos: number, limit = text.length): number {
  while (pos < limit && WHITESPACE.test(text[pos]!)) pos++;
  return pos;
}

/** The longest tail of `text` that is a proper prefix of `marker`: text that may yet become the marker. */
export function heldPrefixLength(text: string, marker: string): number {
  for (let k = Math.min(marker.length - 1, text.length); k > 0; k--) if (text.endsWith(marker.slice(0, k))) return k;
  return 0;
}

/**
 * The first `marker` at or after `from` that is outside every JSON string, or -1: a call's
 * closing tag written inside its own arguments (`{"text": "</tool_call>"}`) is text, not the end.
 */
export function indexOutsideStrings(text: string, marker: string, from: number): number {
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === marker[0] && text.startsWith(marker, i)) return i;
  }
  return -1;
}

/** Scans a container from inside it (`depth` open brackets); the index after the bracket that closes it, or -1. */
export function closeContainer(text: string, pos: number, depth: number, limit = text.length): number {
  let inString = false;
  for (let i = pos; i < limit; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** A JSON value's extent after leading whitespace: [start, end), and whether it is complete before `limit`. */
export function scanValue(text: string, from: number, limit = text.length): { start: number; end: number; complete: boolean } {
  const start = skipWhitespace(text, from, limit);
  if (start >= limit) return { start, end: start, complete: false };
  const c = text[start]!;
  if (c === '{' || c === '[') {
    const end = closeContainer(text, start + 1, 1, limit);
    return end < 0 ? { start, end: limit, complete: false } : { start, end, complete: true };
  }
  if (c === '"') {
    for (let i = start + 1; i < limit; i++) {
      if (text[i] === '\\') i++;
      else if (text[i] === '"') return { start, end: i + 1, complete: true };
    }
    return { start, end: limit, complete: false };
  }
  // A number, true, false or null: it ends where a delimiter begins.
  let end = start;
  while (end < limit && !/[\s,}\]]/.test(text[end]!)) end++;
  return { start, end, complete: end < limit };
}

export interface CallScan {
  readonly call: ParsedToolCall;
  /** The index after the call object's closing brace, or -1 while it is open. */
  readonly end: number;
}

/** A head matcher for call objects whose arguments go under one of `argumentKeys`. */
export function callHead(argumentKeys: readonly string[]): RegExp {
  return new RegExp(`\\s*\\{\\s*"name"\\s*:\\s*"((?:[^"\\\\\\n]|\\\\.)*)"\\s*,\\s*"(?:${argumentKeys.join('|')})"\\s*:`, 'y');
}

/**
 * A call object at `pos` whose head (name first, then the arguments key) is complete before
 * `limit`: its name, its arguments' text so far, and where it ends. Null when the head is not
 * there (yet): the caller holds the text or, at the end, reads it another way.
 */
export function scanCall(text: string, pos: number, limit: number, head: RegExp): CallScan | null {
  const window = text.slice(0, limit);
  head.lastIndex = pos;
  const match = head.exec(window);
  if (match === null) return null;
  let name: string;
  try {
    name = JSON.parse(`"${match[1]!}"`) as string;
  } catch {
    return null;
  }
  const value = scanValue(window, head.lastIndex, limit);
  const call = { name, arguments: window.slice(value.start, value.end) };
  return { call, end: value.complete ? closeContainer(window, value.end, 1, limit) : -1 };
}

/** A whole call object read as JSON (any key order), arguments re-serialized; null if it is not one. */
export function callFromJson(value: unknown, argumentKeys: readonly string[]): ParsedToolCall | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  const key = argumentKeys.find((k) => Object.hasOwn(record, k));
  if (typeof record.name !== 'string' || key === undefined) return null;
  return { name: record.name, arguments: JSON.stringify(record[key]) };
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
