// `oneOf` whose overlapping subschemas are all number ranges (`type` number or integer with
// minimum / maximum / exclusive bounds): the numbers exactly one of them holds, written as a union
// of ranges. The bounds cut the number line into open stretches and single points; in each, whole
// and other numbers are counted apart (an integer range holds only the whole ones), and what
// exactly one subschema holds is kept. Pure.

import { type Bound, boundedInteger, boundedNonInteger, boundedNumber, compareMagnitudes } from '../number-grammar.js';
import { numberBounds } from './number-schema.js';
import { ANNOTATIONS, isObject, type Json, pointer, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

/** A subschema read as a set of numbers: its bounds, and whether it holds whole numbers only. */
interface NumberRange {
  readonly lower: Bound | null;
  readonly upper: Bound | null;
  readonly integer: boolean;
  /** Without `type`, the subschema also holds every value that is not a number. */
  readonly typed: boolean;
}

const RANGE_KEYWORDS = new Set(['type', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']);

/**
 * The oneOf's number ranges (by index) and the grammar for the numbers exactly one of them holds,
 * where every overlapping pair is two number ranges; refused by name otherwise.
 */
export function exactlyOneNumberRange(t: Translation, branches: readonly Json[], overlapping: readonly (readonly [number, number])[], path: string): { branches: Set<number>; body: string | null } {
  const ranges = branches.map((branch, i) => numberRange(t, branch, pointer(path, 'oneOf', i)));
  const [i, j] = overlapping.find(([a, b]) => ranges[a] === null || ranges[b] === null) ?? [];
  if (i !== undefined)
    throw new SchemaUnsupported(
      'oneOf',
      pointer(path, 'oneOf'),
      `subschemas ${i} and ${j} may both match one value (only oneOf over subschemas of different types, constants or number ranges is translated)`,
    );
  // A range without `type` matches every non-number too: sound only where no subschema writes non-numbers.
  if (ranges.some((r) => r !== null && !r.typed) && ranges.some((r) => r === null))
    throw new SchemaUnsupported('oneOf', pointer(path, 'oneOf'), 'a number range without `type` also matches the values of its other subschemas');
  const numeric = [...ranges.entries()].filter((entry): entry is [number, NumberRange] => entry[1] !== null);
  return { branches: new Set(numeric.map(([index]) => index)), body: exactlyOne(numeric.map(([, range]) => range)) };
}

function numberRange(t: Translation, branch: Json, path: string): NumberRange | null {
  const node = t.deref(branch, path);
  if (!isObject(node)) return null;
  if (Object.keys(node).some((k) => !ANNOTATIONS.has(k) && !RANGE_KEYWORDS.has(k))) return null;
  // Draft 4's boolean exclusiveMinimum / exclusiveMaximum are read by numberBounds.
  const types = node['type'] === undefined ? ['number'] : t.typesOf(node, path);
  if (!types.every((type) => type === 'number' || type === 'integer')) return null;
  if (node['type'] === undefined && !Object.keys(node).some((k) => RANGE_KEYWORDS.has(k))) return null;
  return { ...numberBounds(node, path), integer: types.every((type) => type === 'integer'), typed: node['type'] !== undefined };
}

type Point = Pick<Bound, 'negative' | 'magnitude'>;

const compare = (a: Point, b: Point): number => {
  if (a.negative !== b.negative) return a.negative ? -1 : 1;
  const order = compareMagnitudes(a.magnitude, b.magnitude);
  return a.negative ? -order : order;
};

/** The numbers exactly one range holds. */
function exactlyOne(ranges: readonly NumberRange[]): string | null {
  const points: Point[] = [];
  for (const r of ranges) for (const b of [r.lower, r.upper]) if (b !== null && !points.some((p) => compare(p, b) === 0)) points.push({ negative: b.negative, magnitude: b.magnitude });
  points.sort(compare);
  const parts: string[] = [];
  const at = (p: Point, exclusive: boolean): Bound => ({ ...p, exclusive });
  const holdsPoint = (r: NumberRange, p: Point): boolean => {
    if (r.integer && p.magnitude.frac !== '') return false;
    const low = r.lower === null ? -1 : compare(r.lower, p);
    const high = r.upper === null ? 1 : compare(r.upper, p);
    return (low < 0 || (low === 0 && !r.lower!.exclusive)) && (high > 0 || (high === 0 && !r.upper!.exclusive));
  };
  // Bounds are among the points, so a range holds all of an open stretch or none of it.
  const holdsStretch = (r: NumberRange, from: Point | null, to: Point | null): boolean =>
    (r.lower === null || (from !== null && compare(r.lower, from) <= 0)) && (r.upper === null || (to !== null && compare(r.upper, to) >= 0));
  for (let k = 0; k <= points.length; k++) {
    const from = points[k - 1] ?? null;
    const to = points[k] ?? null;
    const holding = ranges.filter((r) => holdsStretch(r, from, to));
    const whole = holding.length === 1;
    const other = holding.filter((r) => !r.integer).length === 1;
    const lower = from && at(from, true);
    const upper = to && at(to, true);
    const body = whole && other ? boundedNumber(lower, upper) : whole ? boundedInteger(lower, upper) : other ? boundedNonInteger(lower, upper) : null;
    if (body !== null) parts.push(body);
    if (to !== null && ranges.filter((r) => holdsPoint(r, to)).length === 1) {
      const single = boundedNumber(at(to, false), at(to, false));
      if (single !== null) parts.push(single);
    }
  }
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}
