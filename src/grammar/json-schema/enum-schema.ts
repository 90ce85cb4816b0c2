// `enum` and `const`: the listed values (of the declared types, meeting the string and number
// keywords beside them) as literal text in the grammar's layout, any JSON value, non-ASCII strings
// included. Pure.

import { ebnfLiteralChoice } from '../grammar-spec.js';
import { CONSTRAINING, hasType, type Json, layoutJson, pointer, type SchemaObject, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

export function enumSchema(t: Translation, node: SchemaObject, path: string): string | null {
  const listed: Json[] = node['const'] !== undefined ? [node['const']] : Array.isArray(node['enum']) ? node['enum'] : [];
  if (node['const'] !== undefined && Array.isArray(node['enum'])) {
    const constText = layoutJson(node['const']);
    if (!node['enum'].some((v) => layoutJson(v) === constText)) return null;
  }
  // Unknown keywords beside them (vendor extensions such as "readonly" or "weight") are ignored, as validators ignore them.
  const other = Object.keys(node).filter((k) => CONSTRAINING.has(k) && !Object.hasOwn(JUDGED, k));
  if (other.length > 0) throw new SchemaUnsupported(other[0]!, pointer(path, other[0]!), 'is not translated beside enum / const');
  const judged = Object.keys(node).filter((k) => Object.hasOwn(JUDGED, k));
  const types = node['type'] === undefined ? null : t.typesOf(node, path);
  const kept = listed.filter((value) => (types === null || types.some((type) => hasType(value, type))) && judged.every((k) => meets(value, node, k, path)));
  if (kept.length === 0) return null;
  const texts = [...new Set(kept.map(layoutJson))];
  // A trie, not a plain choice of literals: xgrammar 0.1.27 misreads literals sharing a prefix and a suffix (ebnfLiteralChoice).
  return ebnfLiteralChoice(texts.map((text) => ({ text })));
}

type Judge = (value: Json, bound: Json, node: SchemaObject) => boolean | null;
/** `booleanMeansNothing`: draft 4's `exclusiveMinimum: true`, which only makes `minimum` exclusive. */
const numberJudge =
  (holds: (value: number, bound: number, node: SchemaObject) => boolean, booleanMeansNothing = false): Judge =>
  (value, bound, node) =>
    typeof bound === 'boolean' && booleanMeansNothing ? true : typeof bound !== 'number' ? null : typeof value !== 'number' || holds(value, bound, node);
const stringJudge =
  (holds: (value: string, bound: number) => boolean): Judge =>
  (value, bound) =>
    typeof bound !== 'number' ? null : typeof value !== 'string' || holds(value, bound);

/**
 * Keywords beside enum / const that a listed value is judged by here, as a validator judges it: a
 * keyword speaks of one type, and a value of another meets it (null: the keyword's own value is
 * malformed, refused). Listed values that fail are left out; nothing else is written.
 */
const JUDGED: Readonly<Record<string, Judge>> = {
  // JSON Schema counts a string's length in code points.
  minLength: stringJudge((value, bound) => [...value].length >= bound),
  maxLength: stringJudge((value, bound) => [...value].length <= bound),
  // Draft 4's boolean exclusiveMinimum / exclusiveMaximum make minimum / maximum exclusive.
  minimum: numberJudge((value, bound, node) => (node['exclusiveMinimum'] === true ? value > bound : value >= bound)),
  maximum: numberJudge((value, bound, node) => (node['exclusiveMaximum'] === true ? value < bound : value <= bound)),
  exclusiveMinimum: numberJudge((value, bound) => value > bound, true),
  exclusiveMaximum: numberJudge((value, bound) => value < bound, true),
  pattern: (value, bound) => {
    if (typeof bound !== 'string') return null;
    try {
      return typeof value !== 'string' || new RegExp(bound, 'u').test(value);
    } catch {
      return null;
    }
  },
};

function meets(value: Json, node: SchemaObject, keyword: string, path: string): boolean {
  const verdict = JUDGED[keyword]!(value, node[keyword]!, node);
  if (verdict === null) throw new SchemaUnsupported(keyword, pointer(path, keyword), 'is not translated beside enum / const (its value cannot be read)');
  return verdict;
}
