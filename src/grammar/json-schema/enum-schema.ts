// `enum` and `const`: the listed values (of the declared types) as literal text in the grammar's
// layout, any JSON value, non-ASCII strings included. Pure.

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
  const other = Object.keys(node).filter((k) => CONSTRAINING.has(k));
  if (other.length > 0) throw new SchemaUnsupported(other[0]!, pointer(path, other[0]!), 'is not translated beside enum / const');
  const types = node['type'] === undefined ? null : t.typesOf(node, path);
  const kept = listed.filter((value) => types === null || types.some((type) => hasType(value, type)));
  if (kept.length === 0) return null;
  const texts = [...new Set(kept.map(layoutJson))];
  // A trie, not a plain choice of literals: xgrammar 0.1.27 misreads literals sharing a prefix and a suffix (ebnfLiteralChoice).
  return ebnfLiteralChoice(texts.map((text) => ({ text })));
}
