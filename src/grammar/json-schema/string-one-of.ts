// `oneOf` whose overlapping subschemas are string languages (`type: "string"` with patterns,
// enforced formats, lengths, or string constants): the strings exactly one of them matches, as one
// automaton over all their regex languages (regex-derivative.ts's exactlyOne), one grammar rule
// per state, refused by name past MAX_INTERSECTION_STATES. JSONSchemaBench's Github splits hold
// such pairs (a fraction or an IEEE number as two patterns; "APPROVER" and "SIGNER" unanchored). Pure.

import { exactlyOne, intersection } from '../regex-derivative.js';
import { PatternUnsupported, type RegexNode } from '../regex-grammar.js';
import { patternLanguage } from '../regex-language.js';
import { stringFormat } from '../string-formats.js';
import { ANNOTATIONS, isObject, isValidated, type Json, pointer, SchemaUnsupported } from './schema-model.js';
import { automatonString, lengthLanguage, MAX_INTERSECTION_STATES } from './string-schema.js';
import type { Translation } from './translation.js';

const STRING_LANGUAGE_KEYWORDS = new Set(['type', 'pattern', 'format', 'minLength', 'maxLength', 'enum', 'const']);

/**
 * A subschema read as a string language: the regex nodes all of whose strings it allows (a
 * conjunction); null where it says more, or allows other values — unless `untyped`, where one
 * without `type` is read as its strings (its other values are excluded elsewhere: untypedOnly).
 */
export function stringLanguage(t: Translation, branch: Json, path: string, untyped = false): RegexNode[] | null {
  const node = t.deref(branch, path);
  // Keywords no validator reads (`name` beside a pattern) say nothing.
  if (!isObject(node) || Object.keys(node).some((k) => !ANNOTATIONS.has(k) && isValidated(k) && !STRING_LANGUAGE_KEYWORDS.has(k))) return null;
  const listed = node['const'] !== undefined ? [node['const']] : Array.isArray(node['enum']) ? node['enum'] : null;
  if (listed !== null && !listed.every((value) => typeof value === 'string')) return null;
  // Without `type` (and without constants) it also matches every value that is not a string.
  if (listed === null && node['type'] !== 'string' && !untyped) return null;
  if (node['type'] !== undefined && node['type'] !== 'string') return null;
  const nodes: RegexNode[] = [];
  try {
    if (typeof node['pattern'] === 'string') nodes.push(patternLanguage(node['pattern']));
    if (typeof node['format'] === 'string') {
      const format = stringFormat(node['format']);
      if ('refusedBy' in format) return null;
      if ('pattern' in format) nodes.push(patternLanguage(format.pattern));
    }
  } catch (error) {
    if (error instanceof PatternUnsupported) return null;
    throw error;
  }
  const min = typeof node['minLength'] === 'number' ? node['minLength'] : 0;
  const max = typeof node['maxLength'] === 'number' ? node['maxLength'] : null;
  if (min > 0 || max !== null) nodes.push(lengthLanguage(min, max));
  if (listed !== null) nodes.push({ t: 'alt', options: (listed as string[]).map(literal) });
  // No constraint at all: every string.
  return nodes.length > 0 ? nodes : [lengthLanguage(0, null)];
}

const literal = (text: string): RegexNode => ({ t: 'seq', items: [...text].map((c): RegexNode => ({ t: 'chars', set: [[c.codePointAt(0)!, c.codePointAt(0)!]] })) });

/**
 * The oneOf's string-language subschemas (by index) and the grammar for the strings exactly one of
 * them matches; null where fewer than two of the overlapping subschemas are string languages.
 */
export function exactlyOneString(t: Translation, branches: readonly Json[], path: string, untyped = false): { branches: Set<number>; body: string | null } {
  const languages = branches.map((branch, i) => stringLanguage(t, branch, pointer(path, 'oneOf', i), untyped));
  const indexes = [...languages.keys()].filter((i) => languages[i] !== null);
  const states = exactlyOne(
    indexes.map((i) => languages[i]!),
    MAX_INTERSECTION_STATES,
  );
  if (states === null) throw new SchemaUnsupported('oneOf', pointer(path, 'oneOf'), `the strings exactly one subschema matches need more than ${MAX_INTERSECTION_STATES} grammar rules`);
  return { branches: new Set(indexes), body: automatonString(t, states, pointer(path, 'oneOf')) };
}

/**
 * Whether every branch of a oneOf is a string language and two or more say no `type` (nor list
 * constants): those two match every value that is not a string, so only strings can match exactly
 * one branch ("APPROVER" and "SIGNER" as bare patterns).
 */
export function untypedOnly(t: Translation, branches: readonly Json[], path: string): boolean {
  let untyped = 0;
  for (const [i, branch] of branches.entries()) {
    if (stringLanguage(t, branch, pointer(path, 'oneOf', i), true) === null) return false;
    const node = t.deref(branch, path) as { [key: string]: Json };
    if (node['type'] === undefined && node['const'] === undefined && node['enum'] === undefined) untyped++;
  }
  return untyped >= 2;
}

/** Whether two subschemas are string languages no string is in both of (an automaton of their intersection has no state). */
export function disjointStrings(t: Translation, a: Json, b: Json, path: string): boolean {
  const x = stringLanguage(t, a, path);
  const y = stringLanguage(t, b, path);
  if (x === null || y === null) return false;
  return intersection([...x, ...y], MAX_INTERSECTION_STATES)?.length === 0;
}
