// The lengths a string schema object allows: its minLength / maxLength, and those its `pattern`
// implies where one bounded repeat of a character set is all the pattern varies by
// (`^[a-z0-9-]{1,255}$`: 1..255 characters). Read the same way by the guard's marks and plan and
// by the translation, which writes such a pattern with its count open (`[a-z0-9-]+`) where the
// guard counts: xgrammar 0.1.27 expands a count into a rule per repetition (`{1,255}` alone took
// 5.6 s to compile on Qwen3's vocabulary). Pure.

import { PatternUnsupported, type RegexNode } from '../regex-grammar.js';
import { countLifted, patternLanguage } from '../regex-language.js';
import type { SchemaObject } from './schema-model.js';

export interface StringLengths {
  readonly min: number;
  readonly max: number | null;
}

/** A pattern's language with its count open and the lengths that close it again, or null; per source (asked at every node of every plan). */
export function liftedPattern(source: string): { readonly node: RegexNode; readonly min: number; readonly max: number } | null {
  let known = lifted.get(source);
  if (known === undefined) {
    try {
      known = countLifted(patternLanguage(source));
    } catch (error) {
      if (!(error instanceof PatternUnsupported || error instanceof SyntaxError)) throw error;
      known = null;
    }
    if (lifted.size > 4096) lifted.clear();
    lifted.set(source, known);
  }
  return known;
}
const lifted = new Map<string, ReturnType<typeof countLifted>>();

/** What the object says of a string's length, its pattern's count included; null where it says nothing. */
export function stringLengths(member: SchemaObject): StringLengths | null {
  const declaredMin = typeof member['minLength'] === 'number' ? member['minLength'] : null;
  const declaredMax = typeof member['maxLength'] === 'number' ? member['maxLength'] : null;
  const implied = typeof member['pattern'] === 'string' ? liftedPattern(member['pattern']) : null;
  if (declaredMin === null && declaredMax === null && implied === null) return null;
  const min = Math.max(declaredMin ?? 0, implied?.min ?? 0);
  const maxes = [declaredMax, implied?.max ?? null].filter((m) => m !== null);
  return { min, max: maxes.length === 0 ? null : Math.min(...maxes) };
}
