// Shared pieces of the fuzz suites: the property every parser must keep (a result or a
// client-error ConveyorError, never an escaped exception, never a stall) and arbitraries for the
// values that break parsers: wrong types, extreme numbers, special strings, prototype keys,
// deep nesting. Runs use fast-check's default random seed; a failure prints the seed and path
// to replay (`fc.assert(..., { seed, path })`), and FUZZ_RUNS scales every suite's run count.

import fc from 'fast-check';
import { expect } from 'vitest';
import type { DataType, Tensor } from '../../../src/contracts/tensors.js';
import { ConveyorError, type ErrorCode } from '../../../src/errors.js';

/** Codes a bad request may earn; INTERNAL (a 500) for client input is itself a bug. */
const CLIENT_CODES: ReadonlySet<ErrorCode> = new Set(['INVALID_ARG', 'UNSUPPORTED', 'CONTEXT_LENGTH_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS']);

/** One input must be handled well inside this, even on a slow shared machine. */
const MAX_MS_PER_INPUT = 2_000;

export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ConveyorError };

/**
 * Runs one parser call: its value, or the ConveyorError it raised. Anything else thrown (a
 * TypeError, a RangeError from the stack) and any non-client code fails the property, as does
 * a call that takes longer than MAX_MS_PER_INPUT.
 */
export function outcome<T>(run: () => T): Outcome<T> {
  const started = performance.now();
  let result: Outcome<T>;
  try {
    result = { ok: true, value: run() };
  } catch (error) {
    if (!(error instanceof ConveyorError)) throw error;
    expect(CLIENT_CODES.has(error.code), `${error.code}: ${error.message}`).toBe(true);
    expect(error.message.length).toBeGreaterThan(0);
    result = { ok: false, error };
  }
  expect(performance.now() - started).toBeLessThan(MAX_MS_PER_INPUT);
  return result;
}

/** Runs for one property: `base` times FUZZ_RUNS (default 1). */
export function runs(base: number): number {
  const scale = Number(process.env['FUZZ_RUNS'] ?? '1');
  return Math.max(1, Math.round(base * (Number.isFinite(scale) && scale > 0 ? scale : 1)));
}

/** Names that reach Object.prototype when code indexes a plain object with a request's key. */
export const PROTOTYPE_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
  '__lookupGetter__',
] as const;

/** Numbers at the edges: signs, 2^31, 2^53, 2^63, 2^64, past double range, fractions. */
export const extremeNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(0, -0, 1, -1, 0.5, -1.5, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), 2 ** 32, 2 ** 53 - 1, 2 ** 53, 2 ** 63, 2 ** 64, -(2 ** 64), 1e308, -1e308, 5e-324, Number.MAX_VALUE),
  fc.integer({ min: -1000, max: 1000 }),
  fc.double(),
);

/** Strings that mean something to some parser: numbers' spellings, escapes, lone surrogates, keys. */
export const trickyString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    'NaN',
    'Infinity',
    '-Infinity',
    'inf',
    '-inf',
    'nan',
    '1e400',
    '-0',
    '0x10',
    '017',
    '9223372036854775808',
    '18446744073709551616',
    'true',
    'null',
    '\u0000',
    '\ud800',
    '\udfff',
    '😀',
    '\u202e',
    '<|im_end|>',
    '../../etc/passwd',
    '%s%n',
    '\\',
    '"',
    ...PROTOTYPE_KEYS,
  ),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
);

/** Arrays nested `depth` deep around `inner`. */
export function nested(depth: number, inner: unknown = 1): unknown {
  let value: unknown = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** Any wrong value for a field: other types, extremes, nesting, objects carrying prototype keys. */
export const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, undefined, true, false, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, [], {}, [[]], [null], nested(50), 10n ** 30n),
  extremeNumber,
  trickyString,
  fc.integer({ min: 60, max: 2_000 }).map((depth) => nested(depth)),
  fc.constantFrom(...PROTOTYPE_KEYS).map((key) => ownRecord([[key, { polluted: true }]])),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Mostly `valid`, sometimes a weird value in its place: reaches deep code yet probes every field. */
export function maybe<T>(valid: fc.Arbitrary<T>, weight = 4): fc.Arbitrary<T | unknown> {
  return fc.oneof({ weight, arbitrary: valid }, { weight: 1, arbitrary: weirdValue });
}

/** An object with exactly these own properties, `__proto__` included (as JSON.parse makes one). */
export function ownRecord(entries: Iterable<readonly [string, unknown]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of entries) Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}

/**
 * An object from optional fields (each present or not) plus, sometimes, an extra key: a
 * prototype name or a random one. Missing fields stay absent rather than undefined. `required`
 * fields are nearly always present, the others only with `presence` probability.
 */
export function objectOf(
  fields: Readonly<Record<string, fc.Arbitrary<unknown>>>,
  extraKeys: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS), fc.string({ maxLength: 8 })),
  { required = Object.keys(fields), presence = 0.25 }: { readonly required?: readonly string[]; readonly presence?: number } = {},
): fc.Arbitrary<Record<string, unknown>> {
  const entries = Object.entries(fields).map(([key, arb]) => {
    const absentWeight = required.includes(key) ? 1 : Math.max(1, Math.round((1 - presence) / presence));
    const presentWeight = required.includes(key) ? 12 : 1;
    return fc.oneof({ weight: absentWeight, arbitrary: fc.constant(undefined) }, { weight: presentWeight, arbitrary: arb.map((v) => [key, v] as const) });
  });
  const extra = sometimes(fc.tuple(extraKeys, weirdValue), 4);
  return fc.tuple(fc.tuple(...entries), extra).map(([present, more]) => ownRecord([...present.filter((e) => e !== undefined), ...(more ? [more] : [])]));
}

/** `arb` once in `every` draws, else undefined (fc.option's freq sets how often it is *absent*). */
export function sometimes<T>(arb: fc.Arbitrary<T>, every: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: every - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
}

/** Text with a few random edits (deletes, inserts, swaps) so a near-valid document breaks anywhere. */
export function mutatedText(text: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const edit = fc.tuple(
    fc.nat(),
    fc.nat({ max: 4 }),
    fc.oneof(fc.constantFrom('', '{', '}', '[', ']', '"', ',', ':', '-', '\\', '\n', '0x', 'e', '.', '#', '<', '>', '\u0000', '\ud83d'), fc.string({ maxLength: 3 })),
  );
  return fc.tuple(text, fc.array(edit, { maxLength: 3 })).map(([source, edits]) => {
    let out = source;
    for (const [at, remove, insert] of edits) {
      const i = out.length === 0 ? 0 : at % (out.length + 1);
      out = out.slice(0, i) + insert + out.slice(i + remove);
    }
    return out;
  });
}

/** JSON text of a value, or of a random document when the value has no JSON form. */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)) ?? 'null';
  } catch {
    return '[]';
  }
}

export const DATATYPES: readonly DataType[] = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BF16', 'BYTES'];
export const BYTES_PER_ELEMENT: Readonly<Record<string, number>> = { BOOL: 1, UINT8: 1, INT8: 1, UINT16: 2, INT16: 2, FP16: 2, BF16: 2, UINT32: 4, INT32: 4, FP32: 4, UINT64: 8, INT64: 8, FP64: 8 };

/** Exact element count, so a codec's float arithmetic cannot agree with itself by accident. */
export const exactCount = (shape: readonly number[]): bigint => shape.reduce((n, d) => n * BigInt(d), 1n);

/** A decoded tensor is consistent: known datatype, storage of the right kind, one element per shape slot, BOOL bytes 0 or 1. */
export function expectConsistentTensor(tensor: Tensor): void {
  expect(DATATYPES).toContain(tensor.datatype);
  for (const dim of tensor.shape) expect(Number.isSafeInteger(dim) && dim >= 0).toBe(true);
  expect(BigInt(tensor.data.length)).toBe(exactCount(tensor.shape));
  if (tensor.datatype === 'BYTES') expect(Array.isArray(tensor.data)).toBe(true);
  else expect((tensor.data as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT).toBe(BYTES_PER_ELEMENT[tensor.datatype]);
  if (tensor.datatype === 'BOOL') for (const b of tensor.data as Uint8Array) expect(b <= 1).toBe(true);
}
