// `allOf` folded into one schema, keyword by keyword, where the result means exactly what all
// the members mean together; refused by name where a merge would loosen or change it. Pure.

import { ANNOTATIONS, isObject, isValidated, type Json, LOWER_BOUND_KEYWORDS, layoutJson, pointer, type SchemaObject, SchemaUnsupported, UPPER_BOUND_KEYWORDS } from './schema-model.js';
import { setOwnEntry } from '../../contracts/own-entry.js';
import type { Translation } from './translation.js';

/** Pairs of branches two members' anyOf (or oneOf) may fold into; past this many, refused (the grammar grows with the product). */
const MAX_CHOICE_PAIRS = 16;

/** allOf folded into one schema where its members speak of different things; refused where they overlap in a way a merge could loosen. */
export function mergeAllOf(t: Pick<Translation, 'deref'>, node: SchemaObject, path: string): SchemaObject {
  const { allOf, ...base } = node;
  let merged: { [key: string]: Json } = { ...base };
  const members: { own: SchemaObject; flat: SchemaObject; isBase: boolean }[] = [{ own: base, flat: base, isBase: true }];
  for (const [i, raw] of (allOf as Json[]).entries()) {
    const member = t.deref(raw, pointer(path, 'allOf', i));
    if (member === true) continue;
    if (!isObject(member)) throw new SchemaUnsupported('allOf', pointer(path, 'allOf', i), 'a subschema allows no value');
    const flat = Array.isArray(member['allOf']) ? mergeAllOf(t, member, pointer(path, 'allOf', i)) : member;
    members.push({ own: member, flat, isBase: false });
    merged = mergeTwo(merged, flat, pointer(path, 'allOf', i));
  }
  // A member's additionalProperties covers the names its own `properties` do not, and a member's
  // unevaluatedProperties the names nothing inside it evaluated (the one beside allOf sees every
  // member's): a property another member names must also meet it there, or the merge would let it through.
  const properties: { [key: string]: Json } = isObject(merged['properties']) ? { ...merged['properties'] } : {};
  for (const { own, flat, isBase } of members) {
    const restrictions: [Json, SchemaObject][] = [];
    if (own['additionalProperties'] !== undefined && own['additionalProperties'] !== true) restrictions.push([own['additionalProperties'], own]);
    if (!isBase && flat['unevaluatedProperties'] !== undefined && flat['unevaluatedProperties'] !== true) restrictions.push([flat['unevaluatedProperties'], flat]);
    for (const [restriction, scope] of restrictions) {
      const named = isObject(scope['properties']) ? Object.keys(scope['properties']) : [];
      for (const foreign of Object.keys(properties).filter((n) => !named.includes(n))) {
        if (scope['patternProperties'] !== undefined)
          throw new SchemaUnsupported(
            'allOf',
            pointer(path, 'allOf'),
            `a subschema's additionalProperties beside patternProperties would decide property ${JSON.stringify(foreign)} another one names`,
          );
        properties[foreign] = both(properties[foreign], restriction);
      }
    }
  }
  if (isObject(merged['properties'])) merged['properties'] = properties;
  return merged;
}

/** One subschema that means both (undefined: no constraint). */
function both(a: Json | undefined, b: Json | undefined): Json {
  if (a === undefined || a === true) return b ?? true;
  if (b === undefined || b === true) return a;
  if (a === false || b === false) return false;
  if (JSON.stringify(a) === JSON.stringify(b)) return a;
  return { allOf: [a, b] };
}

/** An array schema's items as a list for the first positions and one schema for the rest (draft 4–7's tuple `items` too). */
function itemsOf(node: SchemaObject): { prefix: readonly Json[]; rest: Json | undefined } {
  if (Array.isArray(node['prefixItems'])) return { prefix: node['prefixItems'], rest: node['items'] };
  if (Array.isArray(node['items'])) return { prefix: node['items'], rest: node['additionalItems'] };
  return { prefix: [], rest: node['items'] };
}

const ITEM_KEYWORDS = ['prefixItems', 'items', 'additionalItems'];

/** Position by position, what both schemas' items say: a prefix item of one meets the other's item at that place (its prefix, or its rest). */
function mergeItems(a: SchemaObject, b: SchemaObject): { [key: string]: Json } {
  const x = itemsOf(a);
  const y = itemsOf(b);
  const out: { [key: string]: Json } = {};
  const length = Math.max(x.prefix.length, y.prefix.length);
  if (length > 0) out['prefixItems'] = Array.from({ length }, (_, i) => both(x.prefix[i] ?? x.rest, y.prefix[i] ?? y.rest));
  const rest = both(x.rest, y.rest);
  if (x.rest !== undefined || y.rest !== undefined) out['items'] = rest;
  return out;
}

/** Two schemas that must both hold, as one, where that is exact; refused where it is not. */
function mergeTwo(a: SchemaObject, b: SchemaObject, path: string): { [key: string]: Json } {
  const out: { [key: string]: Json } = { ...a };
  const bothItems = ITEM_KEYWORDS.some((k) => a[k] !== undefined) && ITEM_KEYWORDS.some((k) => b[k] !== undefined);
  if (bothItems) {
    for (const key of ITEM_KEYWORDS) delete out[key];
    Object.assign(out, mergeItems(a, b));
  }
  for (const [key, value] of Object.entries(b)) {
    if (bothItems && ITEM_KEYWORDS.includes(key)) continue;
    const mine = Object.hasOwn(out, key) ? out[key] : undefined;
    // Annotations and keywords no validator knows say nothing: the first member's stands.
    if (mine === undefined || ANNOTATIONS.has(key) || !isValidated(key)) {
      if (mine === undefined) setOwnEntry(out, key, value);
      continue;
    }
    if (JSON.stringify(mine) === JSON.stringify(value)) continue;
    if (key === 'properties' && isObject(mine) && isObject(value)) {
      const props: { [key: string]: Json } = { ...mine };
      for (const [name, schema] of Object.entries(value)) setOwnEntry(props, name, Object.hasOwn(props, name) ? both(props[name], schema) : schema);
      out[key] = props;
    } else if (key === 'required' && Array.isArray(mine) && Array.isArray(value)) out[key] = [...new Set([...mine, ...value])];
    else if (key === 'type') {
      const list = (v: Json): string[] => (Array.isArray(v) ? (v as string[]) : [v as string]);
      const both = list(mine).filter((t) => list(value).includes(t) || (t === 'integer' && list(value).includes('number')));
      for (const t of list(value)) if (t === 'integer' && list(mine).includes('number') && !both.includes('integer')) both.push('integer');
      out[key] = both.length === 1 ? both[0]! : both;
    } else if (typeof mine === 'number' && typeof value === 'number' && (LOWER_BOUND_KEYWORDS.has(key) || UPPER_BOUND_KEYWORDS.has(key)))
      out[key] = LOWER_BOUND_KEYWORDS.has(key) ? Math.max(mine, value) : Math.min(mine, value);
    else if (key === 'allOf' && Array.isArray(mine) && Array.isArray(value)) out[key] = [...mine, ...value];
    // (A1 | A2) & (B1 | B2) is the choice of the pairs; for oneOf, exactly one of each is exactly one pair.
    else if ((key === 'anyOf' || key === 'oneOf') && Array.isArray(mine) && Array.isArray(value) && mine.length * value.length <= MAX_CHOICE_PAIRS)
      out[key] = mine.flatMap((x) => value.map((y) => ({ allOf: [x, y] })));
    // Both lists hold: the values in both (an empty list allows nothing).
    else if (key === 'enum' && Array.isArray(mine) && Array.isArray(value)) out[key] = mine.filter((v) => value.some((w) => layoutJson(w) === layoutJson(v)));
    // The names no member lists are additional (and unevaluated) to every member: there each one's schema holds.
    else if (key === 'additionalProperties' || key === 'unevaluatedProperties') out[key] = both(mine, value);
    else throw new SchemaUnsupported('allOf', path, `its subschemas both set ${key} differently`);
  }
  return out;
}
