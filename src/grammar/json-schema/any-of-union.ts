// `anyOf` and `oneOf` as a choice between their branches (siblings merged into each branch);
// `oneOf` only where no value can match two branches, since a grammar cannot exclude the
// values two branches share. Pure.

import { mergeAllOf } from './all-of-merge.js';
import { ANNOTATIONS, constants, isObject, type Json, kindOf, pointer, type SchemaObject, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

export function unionSchema(t: Translation, node: SchemaObject, keyword: 'anyOf' | 'oneOf', path: string): string | null {
  const { [keyword]: branches, ...siblings } = node;
  const list = branches as Json[];
  const constraining = Object.keys(siblings).filter((k) => !ANNOTATIONS.has(k));
  const resolved = list.map((branch, i) => (constraining.length > 0 ? mergeAllOf(t, { allOf: [siblings, branch] }, pointer(path, keyword, i)) : branch));
  if (keyword === 'oneOf') {
    for (let i = 0; i < resolved.length; i++)
      for (let j = i + 1; j < resolved.length; j++)
        if (!disjoint(t, resolved[i]!, resolved[j]!, path))
          throw new SchemaUnsupported('oneOf', pointer(path, 'oneOf'), `subschemas ${i} and ${j} may both match one value (only oneOf over subschemas of different types or constants is translated)`);
  }
  const parts = resolved.map((branch, i) => t.schema(branch, pointer(path, keyword, i))).filter((p): p is string => p !== null);
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}

/** Whether no value can match both subschemas: different types, different constants, or objects with a required property of different constants. */
function disjoint(t: Translation, a: Json, b: Json, path: string): boolean {
  const x = t.deref(a, path);
  const y = t.deref(b, path);
  if (!isObject(x) || !isObject(y)) return false;
  const tx = kinds(t, x, path);
  const ty = kinds(t, y, path);
  if (tx && ty && ![...tx].some((k) => ty.has(k))) return true;
  const vx = constants(x);
  const vy = constants(y);
  if (vx && vy && ![...vx].some((v) => vy.has(v))) return true;
  const px = isObject(x['properties']) ? x['properties'] : {};
  const py = isObject(y['properties']) ? y['properties'] : {};
  const rx = Array.isArray(x['required']) ? x['required'] : [];
  const ry = Array.isArray(y['required']) ? y['required'] : [];
  for (const key of Object.keys(px)) {
    if (!rx.includes(key) || !ry.includes(key) || py[key] === undefined) continue;
    const cx = constants(t.deref(px[key]!, path));
    const cy = constants(t.deref(py[key]!, path));
    if (cx && cy && ![...cx].some((v) => cy.has(v))) return true;
  }
  return false;
}

/** The JSON kinds a schema's values can have, where its const / enum or type says; null where it does not. */
function kinds(t: Translation, node: SchemaObject, path: string): Set<string> | null {
  const values = constants(node);
  if (values) return new Set([...values].map((v) => kindOf(JSON.parse(v) as Json)));
  if (node['type'] === undefined) return null;
  return new Set(t.typesOf(node, path).map((type) => (type === 'integer' ? 'number' : type)));
}
