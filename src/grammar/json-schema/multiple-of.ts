// `multipleOf` read as JSON Schema defines it: the number divided by it is an integer, the decimals
// exact (0.07 is a multiple of 0.01; ajv's and Python jsonschema's default float division say
// 7.000000000000001 and disagree with the JSON Schema Test Suite there). Numbers are written
// without an exponent, as bounded numbers are (number-grammar.ts). Pure.
//
// With m = a / 10^d (a and d whole, m's exact decimal), x is a multiple of m when x * 10^d is a
// whole multiple of a:
//  - a = 1 (0.01, 0.1, 1): at most d fraction digits, within any bounds (number-grammar.ts);
//  - otherwise a remainder automaton over the digits of x * 10^d (one rule per remainder and
//    fraction place), or where bounds cut it, the multiples inside them listed one by one.

import { ebnfLiteralChoice } from '../grammar-spec.js';
import { type Bound, boundedInteger, boundedNumber, integerLimits, magnitudeOf, scaledBound } from '../number-grammar.js';
import type { GrammarRules } from './grammar-rules.js';
import { pointer, SchemaUnsupported } from './schema-model.js';

/** The most remainder states one multipleOf's automaton may take (a rule each), and the most multiples listed one by one between bounds. */
export const MAX_MULTIPLE_STATES = 2048;
export const MAX_LISTED_MULTIPLES = 1024;

export function multipleOfSchema(rules: GrammarRules, type: 'integer' | 'number', lower: Bound | null, upper: Bound | null, multipleOf: number, path: string): string | null {
  const refuse = (why: string): never => {
    throw new SchemaUnsupported('multipleOf', pointer(path, 'multipleOf'), why);
  };
  if (!Number.isFinite(multipleOf) || multipleOf <= 0) refuse('is not a positive number');
  const { magnitude } = magnitudeOf(multipleOf);
  let digits = magnitude.frac.length;
  let step = BigInt(magnitude.int + magnitude.frac);
  // A whole number that is a multiple of a / 10^d is a multiple of a / gcd(a, 10^d): 0.25 takes every integer, 1.5 every third.
  if (type === 'integer') {
    step /= gcd(step, 10n ** BigInt(digits));
    digits = 0;
  }
  if (step === 1n) return digits === 0 ? boundedInteger(lower, upper) : boundedNumber(lower, upper, digits);
  if (step * BigInt(digits + 1) > BigInt(MAX_MULTIPLE_STATES)) refuse(`${multipleOf} needs more than ${MAX_MULTIPLE_STATES} remainder states (one grammar rule each)`);
  const { lo, hi } = integerLimits(lower && scaledBound(lower, digits), upper && scaledBound(upper, digits));
  const parts: string[] = [];
  // 0 is a multiple of everything.
  if ((lo === null || lo <= 0n) && (hi === null || hi >= 0n)) parts.push('"0"');
  // Positive multiples in [max(lo, 1), hi], then negative ones by magnitude in [max(-hi, 1), -lo].
  const sides: [bigint, bigint | null, string][] = [];
  if (hi === null || hi > 0n) sides.push([lo === null || lo < 1n ? 1n : lo, hi, '']);
  if (lo === null || lo < 0n) sides.push([hi === null || hi > -1n ? 1n : -hi, lo === null ? null : -lo, '"-" ']);
  for (const [from, to, sign] of sides) {
    const first = ceilDiv(from, step) * step;
    if (to !== null && first > to) continue;
    if (to !== null && to / step - first / step < BigInt(MAX_LISTED_MULTIPLES)) {
      const listed: { text: string }[] = [];
      for (let x = first; x <= to; x += step) listed.push({ text: decimalText(x, digits) });
      // The sign once before the list, the list a trie: xgrammar 0.1.27 accepted "-4000" from 128
      // alternatives "-" "16" | ... beside unsigned ones, and "8.7277775" from "8.25" | ... | "8.75".
      parts.push(`${sign}${ebnfLiteralChoice(listed)}`);
    } else if (from <= step && to === null) parts.push(`${sign}${positiveMultiples(rules, step, digits)}`);
    else refuse(`its bounds keep more than ${MAX_LISTED_MULTIPLES} multiples of ${multipleOf} and cut them off (only listed multiples, or all of them above zero, are translated)`);
  }
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}

/** x / 10^digits as JSON writes it (no trailing fraction zeros). */
function decimalText(x: bigint, digits: number): string {
  const text = x.toString().padStart(digits + 1, '0');
  const int = text.slice(0, text.length - digits);
  const frac = text.slice(text.length - digits).replace(/0+$/, '');
  return frac === '' ? int : `${int}.${frac}`;
}

const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));
const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/**
 * Positive decimals x with at most `digits` fraction digits and x * 10^digits a multiple of step:
 * states are the remainder so far, and in the fraction how many of its digits are written.
 */
function positiveMultiples(rules: GrammarRules, step: bigint, digits: number): string {
  const a = Number(step);
  const pow = (k: number): number => Number(10n ** BigInt(k) % step);
  // Whether the number can end here: k fraction digits written, remainder r (the rest padded with zeros).
  const ends = (r: number, k: number): boolean => (r * pow(digits - k)) % a === 0;
  // Live fraction states: from (r, k) some fraction of at most `digits` digits ends on a multiple.
  const live = new Map<string, boolean>();
  const isLive = (r: number, k: number): boolean => {
    const key = `${r},${k}`;
    const known = live.get(key);
    if (known !== undefined) return known;
    let alive = ends(r, k);
    for (let g = 0; !alive && k < digits && g <= 9; g++) alive = isLive((r * 10 + g) % a, k + 1);
    live.set(key, alive);
    return alive;
  };
  const names = new Map<string, string>();
  const name = (key: string): string => {
    let known = names.get(key);
    if (!known) {
      known = rules.reserve(`multiple_of_${step}_${key.replace(',', '_')}`);
      names.set(key, known);
    }
    return known;
  };
  /** Digit classes to each next state, `[0369] next` alternatives. */
  const steps = (r: number, first: number, next: (r: number) => string | null): string[] => {
    const byTarget = new Map<string, number[]>();
    for (let g = first; g <= 9; g++) {
      const target = next((r * 10 + g) % a);
      if (target !== null) byTarget.set(target, [...(byTarget.get(target) ?? []), g]);
    }
    return [...byTarget].map(([target, gs]) => `[${gs.join('')}] ${target}`);
  };
  const defined = new Set<string>();
  // After k >= 1 fraction digits.
  const fraction = (r: number, k: number): string | null => {
    if (!isLive(r, k)) return null;
    const key = `f${r},${k}`;
    const rule = name(key);
    if (!defined.has(key)) {
      defined.add(key);
      const parts = ends(r, k) ? ['""'] : [];
      if (k < digits) parts.push(...steps(r, 0, (next) => fraction(next, k + 1)));
      rules.define(rule, parts.join(' | '));
    }
    return rule;
  };
  // In the integer part (at least one digit written, the first not zero).
  const integer = (r: number): string => {
    const key = `i${r}`;
    const rule = name(key);
    if (!defined.has(key)) {
      defined.add(key);
      const parts = steps(r, 0, integer);
      if (ends(r, 0)) parts.unshift('""');
      const point = digits > 0 ? steps(r, 0, (next) => fraction(next, 1)) : [];
      if (point.length > 0) parts.push(`"." (${point.join(' | ')})`);
      rules.define(rule, parts.join(' | '));
    }
    return rule;
  };
  const starts = steps(0, 1, integer);
  // "0." then zeros, then the first non-zero digit (a positive number below 1).
  const belowOne: string[] = [];
  for (let k = 0; k < digits; k++) {
    const rest = steps(0, 1, (next) => fraction(next, k + 1));
    if (rest.length > 0) belowOne.push(`${k > 0 ? `"0"{${k}} ` : ''}(${rest.join(' | ')})`);
  }
  if (belowOne.length > 0) starts.push(`"0." (${belowOne.join(' | ')})`);
  return rules.share(`multiple_of_${step}_e${digits}`, starts.join(' | '));
}
