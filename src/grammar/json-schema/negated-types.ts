// `not: {type: ...}`: the value is of none of those types, which the grammar states by writing the
// node's other types only. The one type a grammar cannot take away is `integer` from `number`
// (the numbers that are not whole): refused by name there. And `not: {pattern: ...}`: a string
// the pattern does not match (every other value matches a pattern, so `not` excludes it), which
// string-schema.ts writes as the automaton of the pattern's complement. Pure.

import { ANNOTATIONS, isObject, type Json, pointer, type SchemaObject, SchemaUnsupported, TYPES, type TypeName } from './schema-model.js';
import type { Translation } from './translation.js';

/** The node with its `not` over types folded into `type`; null where its `not` says something else (or nothing of types). */
export function withoutNegatedTypes(t: Translation, node: SchemaObject, path: string): SchemaObject | null {
  const where = pointer(path, 'not');
  const negated = node['not'] === undefined ? undefined : t.deref(node['not'], where);
  if (!isObject(negated) || negated['type'] === undefined || Object.keys(negated).some((k) => k !== 'type' && !ANNOTATIONS.has(k))) return null;
  const listed: Json[] = Array.isArray(negated['type']) ? negated['type'] : [negated['type']];
  if (!listed.every((type) => typeof type === 'string' && (TYPES as readonly string[]).includes(type))) return null;
  const excluded = new Set(listed as TypeName[]);
  if (excluded.has('number')) excluded.add('integer');
  const types = t.typesOf(node, path);
  if (excluded.has('integer') && !excluded.has('number') && types.includes('number'))
    throw new SchemaUnsupported('not', where, 'numbers that are not integers cannot be written apart from the integers');
  const { not: _, ...rest } = node;
  return { ...rest, type: types.filter((type) => !excluded.has(type)) };
}

/** Where the translation carries a `not: {pattern}` to string-schema.ts (a node of its own making, never a user's keyword). */
export const NOT_PATTERN = '\u0000not-pattern';

/** The node as a string schema whose strings must not match the pattern its `not` names; null where its `not` says anything else. */
export function withNegatedPattern(t: Translation, node: SchemaObject, path: string): SchemaObject | null {
  const negated = node['not'] === undefined ? undefined : t.deref(node['not'], pointer(path, 'not'));
  if (!isObject(negated) || typeof negated['pattern'] !== 'string') return null;
  if (Object.keys(negated).some((k) => k !== 'pattern' && !(k === 'type' && negated[k] === 'string') && !ANNOTATIONS.has(k))) return null;
  // Listed values would be written without reading the marker; `not: {type: "string", pattern}` lets other types through, so only a string node may take it.
  if (node['enum'] !== undefined || node['const'] !== undefined) return null;
  const types = t.typesOf(node, path);
  if (!types.includes('string') || (negated['type'] !== undefined && types.length > 1)) return null;
  const { not: _, ...rest } = node;
  return { ...rest, type: 'string', [NOT_PATTERN]: negated['pattern'] };
}
