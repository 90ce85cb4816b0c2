// The strings the string guard bounds (string-guard.ts): a subschema conjunction's length bounds
// beside its patterns, and whether a bound is the guard's or the counted grammar's. Pure.

import { PatternAutomaton } from '../pattern-automaton.js';
import { stringFormat } from '../string-formats.js';
import { GUARDED_LENGTH_ABOVE } from './guard-marks.js';
import type { SchemaObject } from './schema-model.js';
import { stringLengths } from './string-lengths.js';

/** The characters a string may have: min..max, max null for no bound; beside the patterns (and formats' patterns) the grammar enforces, their automaton. */
export interface LengthBounds {
  readonly min: number;
  readonly max: number | null;
  readonly patterns: readonly string[];
  /** The patterns' automaton where the lengths are the guard's (null: no pattern, or lengths the grammar writes). */
  readonly automaton: PatternAutomaton | null;
}

/**
 * Whether a string schema's bounds are the guard's: one past GUARDED_LENGTH_ABOVE, and beside any
 * patterns (a `pattern`, a format's pattern) an automaton of them whose lengths settle (pattern-automaton.ts).
 */
export function isGuardedLength(min: number, max: number | null, patterns: readonly string[] = []): boolean {
  if ((max ?? min) <= GUARDED_LENGTH_ABOVE || (max !== null && max < min)) return false;
  return patterns.length === 0 || PatternAutomaton.of(patterns) !== null;
}

/** A conjunction of schema objects (never `true`; `false` removes the alternative). */
export type Alternative = readonly SchemaObject[];

/** Whether a schema object's `type` (if any) allows the type. */
export const allowsType = (member: SchemaObject, type: string): boolean => member['type'] === undefined || member['type'] === type || (Array.isArray(member['type']) && member['type'].includes(type));

/** Whether a schema object lists its values (enum / const) and they are all strings. */
export function allStrings(member: SchemaObject): boolean {
  const constants = member['const'] !== undefined ? [member['const']] : Array.isArray(member['enum']) ? member['enum'] : null;
  return constants?.every((c) => typeof c === 'string') === true;
}

/** The strings an alternative allows: none (null), those within bounds (beside patterns), or ones it says more of ('other': constants, a format not enforced). */
export function stringsOf(alternative: Alternative): LengthBounds | 'other' | null {
  if (!alternative.every((m) => allowsType(m, 'string'))) return null;
  let min = 0;
  let max: number | null = null;
  let other = false;
  const patterns = new Set<string>();
  for (const member of alternative) {
    const constants = member['const'] !== undefined ? [member['const']] : Array.isArray(member['enum']) ? member['enum'] : null;
    if (constants !== null && !constants.some((c) => typeof c === 'string')) return null;
    if (constants !== null) other = true;
    if (typeof member['pattern'] === 'string') patterns.add(member['pattern']);
    const format = typeof member['format'] === 'string' ? stringFormat(member['format']) : null;
    if (format !== null && 'pattern' in format) patterns.add(format.pattern);
    if (format !== null && 'refusedBy' in format) other = true;
    const lengths = stringLengths(member);
    if (lengths !== null) min = Math.max(min, lengths.min);
    if (lengths?.max != null) max = max === null ? lengths.max : Math.min(max, lengths.max);
  }
  if (max !== null && max < min) return null;
  if (other) return 'other';
  const list = [...patterns].sort();
  // Only lengths the guard holds need the patterns' automaton (a timezone alternation's took 1.6 s, for a string the grammar bounds alone).
  return { min, max, patterns: list, automaton: list.length > 0 && isGuardedLength(min, max) ? PatternAutomaton.of(list) : null };
}
