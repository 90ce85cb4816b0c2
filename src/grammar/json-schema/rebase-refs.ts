// A schema set inside a larger one: its local references ("#", "#/…") point at its own root, so
// once it sits at `base` in the larger document they must say so. Tool parameters are such
// schemas — a function's arguments sit under its call object (tool-call-grammar.ts) — and
// generated ones (pydantic's $defs, zod's definitions and repeated-schema pointers) are full of
// references. Values that are data, not schemas (enum, const, default, examples), are kept as
// they are, whatever keys they hold. Pure.

import { isObject, type Json } from './schema-model.js';

/** Keywords whose values are JSON data: never read as schemas, never rewritten. */
const DATA = new Set(['enum', 'const', 'default', 'examples', 'example']);
/** Keywords whose values map names to schemas: their keys are names, whatever they spell (a property may be called "enum"). */
const NAME_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']);

/** The schema with each local $ref moved under `base` (a JSON pointer fragment: "#/items/anyOf/0/properties/arguments"). */
export function rebaseRefs(schema: Json, base: string): Json {
  if (Array.isArray(schema)) return schema.map((item) => rebaseRefs(item, base));
  if (!isObject(schema)) return schema;
  const out: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$ref' && typeof value === 'string' && (value === '#' || value.startsWith('#/'))) out[key] = base + value.slice(1);
    else if (NAME_MAPS.has(key) && isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, rebaseRefs(sub, base)]));
    else out[key] = DATA.has(key) ? value : rebaseRefs(value, base);
  }
  return out;
}
