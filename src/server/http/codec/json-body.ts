// JSON parsing for request bodies, plus the small shape checks every decoder repeats.
//
// JSON.parse turns integers past 2^53 into doubles, which would silently corrupt INT64/UINT64
// tensor data and ids. Node 20 has no access to a number's source text from a reviver, so when
// the text holds such an integer we rewrite that literal into a marked string first and revive
// it as a bigint. The rewrite runs only when a cheap regex finds a candidate.

import { invalidArg } from '../../../errors.js';
import type { ParameterValue } from '../../../contracts/infer.js';
import { isObject } from '../../kit/body.js';

export type JsonObject = Record<string, unknown>;

// An integer literal of 16+ digits not part of a fraction or an exponent.
const LONG_INTEGER = /(?<![\d.eE+-])-?\d{16,}(?![\d.eE])/;
// Control character first so no ordinary string is mistaken for a rewritten integer.
const BIG_INTEGER_MARK = '\u0001int:';
const BIG_INTEGER_MARK_JSON = '\\u0001int:';

/** Parses a request body's JSON text; integers beyond 2^53 come back as bigint. */
export function parseJson(text: string): unknown {
  try {
    const marked = LONG_INTEGER.test(text) ? markLongIntegers(text) : text;
    if (marked === text) return JSON.parse(text);
    // The rewrite could make invalid text valid (an integer as an object key becomes a string
    // key), so the original text must parse first; its doubles are then thrown away.
    JSON.parse(text);
    return JSON.parse(marked, reviveLongInteger);
  } catch (error) {
    throw invalidArg(`failed to parse the request JSON: ${(error as Error).message}`);
  }
}

function reviveLongInteger(_key: string, value: unknown): unknown {
  return typeof value === 'string' && value.startsWith(BIG_INTEGER_MARK) ? BigInt(value.slice(BIG_INTEGER_MARK.length)) : value;
}

function markLongIntegers(text: string): string {
  let out = '';
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = stringEnd(text, i);
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      const end = numberEnd(text, i);
      const token = text.slice(i, end);
      if (/^-?\d{16,}$/.test(token) && !Number.isSafeInteger(Number(token))) {
        out += `${text.slice(copied, i)}"${BIG_INTEGER_MARK_JSON}${token}"`;
        copied = end;
      }
      i = end;
    } else {
      i++;
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}

function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x5c /* \ */) i += 2;
    else if (c === 0x22) return i + 1;
    else i++;
  }
  return i;
}

function numberEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length && /[\d.eE+-]/.test(text[i]!)) i++;
  return i;
}

export function expectObject(value: unknown, what: string): JsonObject {
  if (!isObject(value)) throw invalidArg(`${what} must be a JSON object`);
  return value;
}

export function optionalString(object: JsonObject, key: string, what: string): string | undefined {
  const value = object[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalidArg(`${what} '${key}' must be a string`);
  return value;
}

export function optionalBoolean(object: JsonObject, key: string, what: string): boolean | undefined {
  const value = object[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw invalidArg(`${what} '${key}' must be a boolean`);
  return value;
}

/** A non-negative integer given as a JSON number (or a revived bigint within 2^53). */
export function asCount(value: unknown): number | undefined {
  const n = typeof value === 'bigint' ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** A `parameters` object: values must be scalars (string, number, boolean). */
export function decodeParameters(value: unknown, what: string): Record<string, ParameterValue> {
  if (value === undefined) return {};
  if (!isObject(value)) throw invalidArg(`${what} 'parameters' must be a JSON object`);
  for (const [key, v] of Object.entries(value)) {
    const scalar = typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint';
    if (!scalar) throw invalidArg(`${what} parameter '${key}' must be a string, number or boolean`);
  }
  return value as Record<string, ParameterValue>;
}

/** JSON text of a scalar, printing bigints as exact JSON numbers. */
export function scalarText(value: ParameterValue): string {
  return typeof value === 'bigint' ? value.toString() : JSON.stringify(value);
}

/** JSON text of a flat object of scalars (parameters), bigints printed exactly. */
export function parametersText(parameters: Readonly<Record<string, ParameterValue>>): string {
  const fields = Object.entries(parameters).map(([key, value]) => `${JSON.stringify(key)}:${scalarText(value)}`);
  return `{${fields.join(',')}}`;
}
