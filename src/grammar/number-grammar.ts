// JSON numbers inside bounds, as EBNF expressions built digit by digit. Pure.
//
// A bound is read as the exact decimal its JSON text names (0.1 is one tenth, not the double
// nearest it), so an output the grammar allows is inside the bound as a decimal, and hence as the
// double a parser reads it to (rounding is monotone). Bounded numbers are written without an
// exponent: the grammar enumerates digit strings, and "1e-3" is the same value as "0.001".
//
// The construction: a non-negative decimal is an integer part (JSON's "0" or no leading zero)
// and an optional fraction. Integer ranges split by length; inside one length the usual
// "same first digit: recurse; else lower tail | middle digits | upper tail" rule. A fraction
// range compares digit strings as if padded with zeros, one digit at a time.

/** A non-negative decimal: integer digits (no leading zeros; "0" for zero) and fraction digits (no trailing zeros). */
export interface Magnitude {
  readonly int: string;
  readonly frac: string;
}

/** A bound on a value: its sign, magnitude and whether it is exclusive. */
export interface Bound {
  readonly negative: boolean;
  readonly magnitude: Magnitude;
  readonly exclusive: boolean;
}

const DIGIT = '[0-9]';
const alt = (parts: readonly string[]): string | null => (parts.length === 0 ? null : parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`);
const lit = (digits: string): string => `"${digits}"`;
const digitRange = (lo: number, hi: number): string => (lo === hi ? lit(String(lo)) : `[${lo}-${hi}]`);
const isZero = (m: Magnitude): boolean => m.int === '0' && m.frac === '';

/** The exact decimal a JSON number's value names, from the double JSON.parse made of it (its shortest round-trip text). */
export function magnitudeOf(value: number): { negative: boolean; magnitude: Magnitude } {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  const text = Math.abs(value).toString();
  const [mantissa, exponentText] = text.split('e') as [string, string | undefined];
  const [intPart, fracPart = ''] = mantissa.split('.') as [string, string | undefined];
  let digits = intPart + fracPart;
  let point = intPart.length + Number(exponentText ?? 0);
  if (point < 0) {
    digits = '0'.repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits += '0'.repeat(point - digits.length);
  const int = digits.slice(0, point).replace(/^0+/, '') || '0';
  const frac = digits.slice(point).replace(/0+$/, '');
  return { negative: value < 0 && !(int === '0' && frac === ''), magnitude: { int, frac } };
}

/** Compares two magnitudes: negative, zero or positive as a < b, a = b, a > b. */
export function compareMagnitudes(a: Magnitude, b: Magnitude): number {
  if (a.int.length !== b.int.length) return a.int.length - b.int.length;
  if (a.int !== b.int) return a.int < b.int ? -1 : 1;
  const width = Math.max(a.frac.length, b.frac.length);
  const fa = a.frac.padEnd(width, '0');
  const fb = b.frac.padEnd(width, '0');
  return fa === fb ? 0 : fa < fb ? -1 : 1;
}

// ---- integer digit strings ------------------------------------------------------------------

/** Digit strings of s's length that are >= s (leading zeros allowed: a tail). */
function atLeastSameLength(s: string): string {
  if (s === '') return '""';
  const d = Number(s[0]);
  const rest = s.slice(1);
  const parts = [`${lit(s[0]!)} ${atLeastSameLength(rest)}`];
  if (d < 9) parts.push(`${digitRange(d + 1, 9)}${rest.length > 0 ? ` ${DIGIT}{${rest.length}}` : ''}`);
  return alt(parts)!;
}

/** Digit strings of s's length that are <= s. */
function atMostSameLength(s: string): string {
  if (s === '') return '""';
  const d = Number(s[0]);
  const rest = s.slice(1);
  const parts = [`${lit(s[0]!)} ${atMostSameLength(rest)}`];
  if (d > 0) parts.push(`${digitRange(0, d - 1)}${rest.length > 0 ? ` ${DIGIT}{${rest.length}}` : ''}`);
  return alt(parts)!;
}

/** Digit strings of one length between lo and hi (lo <= hi, same length). */
function rangeSameLength(lo: string, hi: string): string {
  if (lo === '') return '""';
  if (lo[0] === hi[0]) return `${lit(lo[0]!)} ${rangeSameLength(lo.slice(1), hi.slice(1))}`;
  const a = Number(lo[0]);
  const b = Number(hi[0]);
  const tail = lo.length - 1;
  const parts = [`${lit(lo[0]!)} ${atLeastSameLength(lo.slice(1))}`];
  if (b - a > 1) parts.push(`${digitRange(a + 1, b - 1)}${tail > 0 ? ` ${DIGIT}{${tail}}` : ''}`);
  parts.push(`${lit(hi[0]!)} ${atMostSameLength(hi.slice(1))}`);
  return alt(parts)!;
}

const lessInt = (a: string, b: string): boolean => a.length < b.length || (a.length === b.length && a < b);
const addOne = (n: string): string => (BigInt(n) + 1n).toString();
const subOne = (n: string): string => (BigInt(n) - 1n).toString();

/**
 * JSON integers (no sign, no leading zeros) between lo and hi inclusive; hi null: no upper bound.
 * Null when the range is empty.
 */
export function integerRange(lo: string, hi: string | null): string | null {
  if (hi !== null && lessInt(hi, lo)) return null;
  const parts: string[] = [];
  const top = hi === null ? lo.length : hi.length;
  // The lowest length, from lo up to that length's largest (or to hi).
  const firstHi = hi !== null && hi.length === lo.length ? hi : '9'.repeat(lo.length);
  parts.push(rangeSameLength(lo, firstHi));
  // Whole lengths strictly between: one repetition.
  const fromLength = lo.length + 1;
  const toLength = hi === null ? null : hi.length - 1;
  if (toLength === null) parts.push(`[1-9] ${DIGIT}{${fromLength - 1}} ${DIGIT}*`);
  else if (toLength >= fromLength) parts.push(`[1-9] ${DIGIT}{${fromLength - 1},${toLength - 1}}`);
  if (hi !== null && top > lo.length) parts.push(rangeSameLength(`1${'0'.repeat(top - 1)}`, hi));
  return alt(parts);
}

// ---- fraction digit strings -----------------------------------------------------------------

/** A set of fraction digit strings: the EBNF for its non-empty members (null: none) and whether "" (no fraction) is in it. */
interface FractionSet {
  readonly nonEmpty: string | null;
  readonly empty: boolean;
}

/** Any fraction of at most `budget` digits (null: any length), the empty one included. */
const anyFraction = (budget: number | null): FractionSet => ({ nonEmpty: budget === null ? `${DIGIT}+` : budget === 0 ? null : `${DIGIT}{1,${budget}}`, empty: true });
/** Lower and upper fraction bounds: the digits (compared as if zero-padded) and whether they are exclusive; null: none. */
type FractionBound = { readonly digits: string; readonly exclusive: boolean } | null;

/** `tail` more digits after one already written: any (null), none (0), or up to budget - 1. */
const anyDigits = (budget: number | null): string => (budget === null ? `${DIGIT}*` : budget <= 1 ? '' : `${DIGIT}{0,${budget - 1}}`);

/**
 * Fractions f with lower < f (or <=) and f < upper (or <=), digit strings read as 0.f, of at most
 * `budget` digits (null: any number; multipleOf 0.01 leaves two).
 */
function fractionSet(lower: FractionBound, upper: FractionBound, budget: number | null = null): FractionSet {
  const lowerZero = lower !== null && /^0*$/.test(lower.digits);
  const upperZero = upper !== null && /^0*$/.test(upper.digits);
  // A lower bound of zero, inclusive, is no bound.
  if (lower !== null && lowerZero && !lower.exclusive) return fractionSet(null, upper, budget);
  // No digit left: only the empty fraction (zero), where the bounds let zero in.
  if (budget === 0) return { nonEmpty: null, empty: lower === null && !(upper !== null && upperZero && upper.exclusive) };
  if (lower === null && upper === null) return anyFraction(budget);
  if (upper !== null && upperZero) {
    // Only zero (or nothing) lies at or below zero.
    if (upper.exclusive || lower !== null) return { nonEmpty: null, empty: false };
    return { nonEmpty: budget === null ? '"0"+' : `"0"{1,${budget}}`, empty: true };
  }
  if (lower !== null && lowerZero && upper === null) {
    if (budget === null) return { nonEmpty: `"0"* [1-9] ${DIGIT}*`, empty: false };
    // The first non-zero digit at each place the budget leaves.
    return { nonEmpty: alt(Array.from({ length: budget }, (_, i) => `${i > 0 ? `"0"{${i}} ` : ''}[1-9]${i < budget - 1 ? ` ${DIGIT}{0,${budget - 1 - i}}` : ''}`)), empty: false };
  }
  const empty = lower === null;
  const lowDigit = lower === null ? -1 : lowerZero ? 0 : Number(lower.digits[0] ?? '0');
  const highDigit = upper === null ? 10 : Number(upper.digits[0] ?? '0');
  const rest = budget === null ? null : budget - 1;
  const parts: string[] = [];
  const follow = (digit: number, more: FractionSet): void => {
    if (more.nonEmpty === null && !more.empty) return;
    const head = lit(String(digit));
    if (more.nonEmpty === null) parts.push(head);
    else parts.push(more.empty ? `${head} (${more.nonEmpty})?` : `${head} ${more.nonEmpty}`);
  };
  const tail = (bound: FractionBound): FractionBound => (bound === null ? null : { digits: bound.digits.slice(1), exclusive: bound.exclusive });
  const middleLo = Math.max(0, lowDigit + 1);
  const middleHi = Math.min(9, highDigit - 1);
  for (let digit = Math.max(0, lowDigit); digit <= Math.min(9, highDigit); digit++) {
    if (digit === lowDigit && digit === highDigit) follow(digit, fractionSet(tail(lower), tail(upper), rest));
    else if (digit === lowDigit) follow(digit, fractionSet(tail(lower), null, rest));
    else if (digit === highDigit) follow(digit, fractionSet(null, tail(upper), rest));
    else if (digit === middleLo) parts.push(`${digitRange(middleLo, middleHi)}${anyDigits(budget) === '' ? '' : ` ${anyDigits(budget)}`}`);
  }
  return { nonEmpty: alt(parts), empty };
}

const withFraction = (int: string, fraction: FractionSet): string | null => {
  if (fraction.nonEmpty === null) return fraction.empty ? int : null;
  return fraction.empty ? `${int} ("." ${fraction.nonEmpty})?` : `${int} "." ${fraction.nonEmpty}`;
};

/** A fraction strictly above zero: what makes a number not whole. */
const ABOVE_ZERO: FractionBound = { digits: '', exclusive: true };

/**
 * Non-negative decimals between the bounds (exclusive where they say so), no sign, no exponent, at
 * most `budget` fraction digits, only those with a non-zero fraction where `nonInteger`; null when empty.
 */
function decimalMagnitudes(lower: { m: Magnitude; exclusive: boolean }, upper: { m: Magnitude; exclusive: boolean } | null, budget: number | null, nonInteger = false): string | null {
  const parts: (string | null)[] = [];
  // A whole lower bound excludes its own value among non-integers (the fraction must be above zero).
  const lowBound = { digits: lower.m.frac, exclusive: lower.exclusive || (nonInteger && lower.m.frac === '') };
  const fromZero = nonInteger ? ABOVE_ZERO : null;
  if (upper !== null && upper.m.int === lower.m.int) {
    parts.push(withFraction(lit(lower.m.int), fractionSet(lowBound, { digits: upper.m.frac, exclusive: upper.exclusive }, budget)));
    return alt(parts.filter((p): p is string => p !== null));
  }
  parts.push(withFraction(lit(lower.m.int), fractionSet(lowBound, null, budget)));
  const middle = integerRange(addOne(lower.m.int), upper === null ? null : subOne(upper.m.int));
  if (middle !== null) parts.push(withFraction(middle, nonInteger ? fractionSet(fromZero, null, budget) : anyFraction(budget)));
  if (upper !== null) parts.push(withFraction(lit(upper.m.int), fractionSet(fromZero, { digits: upper.m.frac, exclusive: upper.exclusive }, budget)));
  return alt(parts.filter((p): p is string => p !== null));
}

const ZERO: Magnitude = { int: '0', frac: '' };

/** Splits signed bounds into the non-negative range and the negated negative range (magnitudes). */
function halves(lower: Bound | null, upper: Bound | null) {
  // Non-negative side: [max(lower, 0), upper].
  let positive: { lo: { m: Magnitude; exclusive: boolean }; hi: { m: Magnitude; exclusive: boolean } | null } | null = null;
  if (upper === null || (!upper.negative && (!isZero(upper.magnitude) || !upper.exclusive))) {
    const lo = lower === null || lower.negative ? { m: ZERO, exclusive: false } : { m: lower.magnitude, exclusive: lower.exclusive };
    positive = { lo, hi: upper === null ? null : { m: upper.magnitude, exclusive: upper.exclusive } };
  }
  // Negative side, as magnitudes: [max(-upper, 0), -lower], strictly above zero ("-0" is zero, written once).
  let negative: typeof positive = null;
  if (lower === null || (lower.negative && !isZero(lower.magnitude))) {
    const lo = upper?.negative ? { m: upper.magnitude, exclusive: upper.exclusive } : { m: ZERO, exclusive: true };
    negative = { lo, hi: lower === null ? null : { m: lower.magnitude, exclusive: lower.exclusive } };
  }
  return { positive, negative };
}

/**
 * JSON numbers (decimal, no exponent) within the bounds, with at most `fractionDigits` digits after
 * the point (null: any; multipleOf 0.01 is two); null when no number is.
 */
export function boundedNumber(lower: Bound | null, upper: Bound | null, fractionDigits: number | null = null): string | null {
  return signedDecimals(lower, upper, fractionDigits, false);
}

/** JSON numbers within the bounds that are not whole (a fraction with a non-zero digit), no exponent; null when none is. */
export function boundedNonInteger(lower: Bound | null, upper: Bound | null): string | null {
  return signedDecimals(lower, upper, null, true);
}

function signedDecimals(lower: Bound | null, upper: Bound | null, fractionDigits: number | null, nonInteger: boolean): string | null {
  const { positive, negative } = halves(lower, upper);
  const parts: string[] = [];
  for (const [half, sign] of [
    [positive, ''],
    [negative, '"-" '],
  ] as const) {
    if (half === null) continue;
    const order = half.hi === null ? -1 : compareMagnitudes(half.lo.m, half.hi.m);
    if (order > 0 || (order === 0 && (half.lo.exclusive || half.hi!.exclusive))) continue;
    const body = decimalMagnitudes(half.lo, half.hi, fractionDigits, nonInteger);
    if (body !== null) parts.push(`${sign}${body}`);
  }
  return alt(parts);
}

/** The integer range a bound leaves: inclusive integer limits (as signed bigint), null where unbounded. */
export function integerLimits(lower: Bound | null, upper: Bound | null): { lo: bigint | null; hi: bigint | null } {
  const floorOf = (b: Bound): bigint => {
    const int = BigInt(b.magnitude.int);
    const fractional = b.magnitude.frac !== '';
    return b.negative ? -int - (fractional ? 1n : 0n) : int;
  };
  const ceilOf = (b: Bound): bigint => {
    const int = BigInt(b.magnitude.int);
    const fractional = b.magnitude.frac !== '';
    return b.negative ? -int : int + (fractional ? 1n : 0n);
  };
  const lo = lower === null ? null : lower.exclusive ? floorOf(lower) + 1n : ceilOf(lower);
  const hi = upper === null ? null : upper.exclusive ? ceilOf(upper) - 1n : floorOf(upper);
  return { lo, hi };
}

/** JSON integers within the bounds; null when none is. */
export function boundedInteger(lower: Bound | null, upper: Bound | null): string | null {
  const { lo, hi } = integerLimits(lower, upper);
  if (lo !== null && hi !== null && lo > hi) return null;
  const parts: string[] = [];
  // Non-negative: [max(lo, 0), hi].
  if (hi === null || hi >= 0n) {
    const from = lo === null || lo < 0n ? 0n : lo;
    const range = integerRange(from.toString(), hi === null ? null : hi.toString());
    if (range !== null) parts.push(range);
  }
  // Negative: magnitudes [max(-hi, 1), -lo].
  if (lo === null || lo < 0n) {
    const from = hi !== null && hi < 0n ? -hi : 1n;
    const range = integerRange(from.toString(), lo === null ? null : (-lo).toString());
    if (range !== null) parts.push(`"-" ${range}`);
  }
  return alt(parts);
}

/** A bound times 10^digits, exactly (the point moved right). */
export function scaledBound(bound: Bound, digits: number): Bound {
  const { int, frac } = bound.magnitude;
  const moved = frac.padEnd(digits, '0');
  return { ...bound, magnitude: { int: (int + moved.slice(0, digits)).replace(/^0+(?=\d)/, ''), frac: moved.slice(digits).replace(/0+$/, '') } };
}

/**
 * The bound a schema keyword's value sets. Past 2^53 a double holds no longer the integer its JSON
 * text wrote (`maximum: 9223372036854775807`, int64's, reads as 2^63, whose shortest text is
 * 9223372036854776000): every integer within half a step of the double reads the same, so the
 * bound is moved inward by that half step — never looser than the schema (Python's exact integers
 * call 9223372036854775808 too large), at the cost of the few hundred integers next to it.
 */
export function boundOf(value: number, exclusive: boolean, side: 'lower' | 'upper'): Bound {
  const { negative, magnitude } = magnitudeOf(value);
  const size = Math.abs(value);
  if (size <= Number.MAX_SAFE_INTEGER) return { negative, magnitude, exclusive };
  // The spacing of doubles at this size, and below it (half as much at a power of two).
  const step = 2n ** BigInt(Math.floor(Math.log2(size)) - 52);
  const exact = BigInt(size);
  const stepBelow = exact === 2n ** BigInt(Math.floor(Math.log2(size))) ? step / 2n : step;
  // Inward: toward zero for an upper bound above zero or a lower bound below it, away from zero otherwise.
  const towardZero = (side === 'upper') !== negative;
  const moved = towardZero ? exact - stepBelow / 2n : exact + step / 2n;
  return { negative, magnitude: { int: moved.toString(), frac: '' }, exclusive };
}
