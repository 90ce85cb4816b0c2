// `not: {type: ...}`: the value is of none of those types, which the grammar states by writing the
// node's other types only. The one type a grammar cannot take away is `integer` from `number`
// (the numbers that are not whole): refused by name there. Pure.

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
