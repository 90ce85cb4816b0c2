// `allOf` folded into one schema, keyword by keyword, where the result means exactly what all
// the members mean together; refused by name where a merge would loosen or change it. Pure.

import { ANNOTATIONS, isObject, type Json, LOWER_BOUND_KEYWORDS, pointer, type SchemaObject, SchemaUnsupported, UPPER_BOUND_KEYWORDS } from './schema-model.js';
import type { Translation } from './translation.js';

/** allOf folded into one schema where its members speak of different things; refused where they overlap in a way a merge could loosen. */
export function mergeAllOf(t: Translation, node: SchemaObject, path: string): SchemaObject {
  const { allOf, ...base } = node;
  let merged: { [key: string]: Json } = { ...base };
  const members = [base, ...(allOf as Json[]).map((m, i) => t.deref(m, pointer(path, 'allOf', i)))];
  for (const [i, member] of members.entries()) {
    if (i === 0) continue;
    if (member === true) continue;
    if (!isObject(member)) throw new SchemaUnsupported('allOf', pointer(path, 'allOf', i - 1), 'a subschema allows no value');
    let flat: SchemaObject = member;
    if (Array.isArray(member['allOf'])) flat = mergeAllOf(t, member, pointer(path, 'allOf', i - 1));
    merged = mergeTwo(merged, flat, pointer(path, 'allOf', i - 1));
  }
  // A member's own additionalProperties applies to its own properties only: merging must not let another member's property through it.
  const allNames = isObject(merged['properties']) ? Object.keys(merged['properties']) : [];
  for (const member of members) {
    if (!isObject(member) || member['additionalProperties'] === undefined || member['additionalProperties'] === true) continue;
    const own = isObject(member['properties']) ? Object.keys(member['properties']) : [];
    const foreign = allNames.find((n) => !own.includes(n));
    if (foreign !== undefined) throw new SchemaUnsupported('allOf', pointer(path, 'allOf'), `a subschema's additionalProperties would refuse property ${JSON.stringify(foreign)} another one names`);
  }
  return merged;
}

/** Two schemas that must both hold, as one, where that is exact; refused where it is not. */
function mergeTwo(a: SchemaObject, b: SchemaObject, path: string): { [key: string]: Json } {
  const out: { [key: string]: Json } = { ...a };
  for (const [key, value] of Object.entries(b)) {
    const mine = out[key];
    if (mine === undefined || ANNOTATIONS.has(key)) {
      if (mine === undefined) out[key] = value;
      continue;
    }
    if (JSON.stringify(mine) === JSON.stringify(value)) continue;
    if (key === 'properties' && isObject(mine) && isObject(value)) {
      const props: { [key: string]: Json } = { ...mine };
      for (const [name, schema] of Object.entries(value)) props[name] = props[name] === undefined ? schema : { allOf: [props[name]!, schema] };
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
    else throw new SchemaUnsupported('allOf', path, `its subschemas both set ${key} differently`);
  }
  return out;
}
