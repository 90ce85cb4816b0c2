// `integer` and `number` schemas: bounds (inclusive, exclusive, draft 4's boolean form) digit by
// digit through number-grammar.ts, multipleOf through multiple-of.ts, ajv-formats' number formats. Pure.

import { type Bound, boundedInteger, boundedNumber, boundOf } from '../number-grammar.js';
import { NUMBER_FORMATS } from '../string-formats.js';
import { multipleOfSchema } from './multiple-of.js';
import { pointer, type SchemaObject, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

export function numberSchema(t: Translation, node: SchemaObject, declared: 'integer' | 'number', path: string): string | null {
  const format = typeof node['format'] === 'string' && Object.hasOwn(NUMBER_FORMATS, node['format']) ? NUMBER_FORMATS[node['format']]! : null;
  const type = format?.integer ? 'integer' : declared;
  const { lower, upper } = numberBounds(node, path, format?.range ?? null);
  const multipleOf = node['multipleOf'];
  if (multipleOf !== undefined) {
    if (typeof multipleOf !== 'number') throw new SchemaUnsupported('multipleOf', pointer(path, 'multipleOf'), 'is not a number');
    const body = multipleOfSchema(t.rules, type, lower, upper, multipleOf, path);
    return body === null ? null : t.rules.share(`${type}_multiple`, body);
  }
  if (lower === null && upper === null) return type === 'integer' ? t.rules.anyInteger() : t.rules.anyNumber();
  const body = type === 'integer' ? boundedInteger(lower, upper) : boundedNumber(lower, upper);
  return body === null ? null : t.rules.share(`${type}_range`, body);
}

/** The tightest lower and upper bound a number schema's keywords (and a format's range) set. */
export function numberBounds(node: SchemaObject, path: string, formatRange: readonly [number, number] | null = null): { lower: Bound | null; upper: Bound | null } {
  const bound = (key: string, exclusive: boolean, side: 'lower' | 'upper'): Bound | null => {
    const value = node[key];
    if (value === undefined || typeof value === 'boolean') return null;
    if (typeof value !== 'number') throw new SchemaUnsupported(key, pointer(path, key), 'is not a number');
    return boundOf(value, exclusive, side);
  };
  // Draft 4's boolean exclusiveMinimum / exclusiveMaximum make minimum / maximum exclusive.
  const lowers = [bound('minimum', node['exclusiveMinimum'] === true, 'lower'), bound('exclusiveMinimum', true, 'lower'), formatRange && boundOf(formatRange[0], false, 'lower')].filter(
    (b): b is Bound => b !== null,
  );
  const uppers = [bound('maximum', node['exclusiveMaximum'] === true, 'upper'), bound('exclusiveMaximum', true, 'upper'), formatRange && boundOf(formatRange[1], false, 'upper')].filter(
    (b): b is Bound => b !== null,
  );
  return { lower: tightest(lowers, 'lower'), upper: tightest(uppers, 'upper') };
}

/** The bound that decides on one side: the largest lower or smallest upper, exclusive where two are equal. */
function tightest(bounds: readonly Bound[], side: 'lower' | 'upper'): Bound | null {
  if (bounds.length === 0) return null;
  const value = (b: Bound): number => Number(`${b.negative ? '-' : ''}${b.magnitude.int}.${b.magnitude.frac || '0'}`);
  return bounds.reduce((best, b) => {
    const diff = value(b) - value(best);
    if (diff === 0) return b.exclusive ? b : best;
    return (side === 'lower' ? diff > 0 : diff < 0) ? b : best;
  });
}
