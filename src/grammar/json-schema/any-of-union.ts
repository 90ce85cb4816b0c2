// `anyOf` and `oneOf` as a choice between their branches (siblings merged into each branch);
// `oneOf` only where no value can match two branches, since a grammar cannot exclude the
// values two branches share, or where the branches that overlap are number ranges
// (numeric-one-of.ts writes the numbers exactly one holds), string languages (string-one-of.ts:
// the strings exactly one matches) or closed objects whose only shared
// value is {} (written with at least one key), or arrays whose only shared value is [] (written with
// at least one item). oneOf / anyOf over subschemas that only say
// `required` never come here: presence-constraints.ts reads them. Pure.

import { mergeAllOf } from './all-of-merge.js';
import { exactlyOneNumberRange } from './numeric-one-of.js';
import { disjointStrings, exactlyOneString, stringLanguage, untypedOnly } from './string-one-of.js';
import { ANNOTATIONS, constants, constrains, isObject, type Json, kindOf, pointer, type SchemaObject, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

export function unionSchema(t: Translation, node: SchemaObject, keyword: 'anyOf' | 'oneOf', path: string): string | null {
  const { [keyword]: branches, ...siblings } = node;
  const list = branches as Json[];
  // Siblings every value meets (`additionalProperties: {}`), or a `type` every branch already
  // keeps to, are dropped, so a branch stays the schema object it is (any-order.ts follows it by identity).
  const constraining = Object.keys(siblings).filter((k) => constrains(k, siblings[k]) && !(k === 'type' && list.every((branch) => typeWithin(t.deref(branch, path), siblings[k]))));
  const resolved = list.map((branch, i) => (constraining.length > 0 ? mergeAllOf(t, { allOf: [siblings, branch] }, pointer(path, keyword, i)) : branch));
  const overlapping: [number, number][] = [];
  if (keyword === 'oneOf') for (let i = 0; i < resolved.length; i++) for (let j = i + 1; j < resolved.length; j++) if (!disjoint(t, resolved[i]!, resolved[j]!, path)) overlapping.push([i, j]);
  // Closed objects whose only shared value is {}, arrays whose only shared value is []: that value matches two branches, so no branch may write it.
  const emptyOnly = overlapping.map(([i, j]) => [i, j, shareOnlyEmpty(t, resolved[i]!, resolved[j]!, path)] as const).filter(([, , empty]) => empty !== null);
  const rest = overlapping.filter(([i, j]) => !emptyOnly.some(([a, b]) => a === i && b === j));
  const choices = withoutEmpty(t, resolved, new Set(emptyOnly.map(([, , empty]) => empty!)), path);
  // Overlapping string languages (patterns, formats, lengths, string constants) are written as the
  // strings exactly one of them matches; overlapping number ranges as the numbers exactly one holds;
  // any other overlap is refused there.
  const untyped = keyword === 'oneOf' && untypedOnly(t, choices, path);
  const isString = (i: number): boolean => stringLanguage(t, choices[i]!, pointer(path, keyword, i), untyped) !== null;
  const stringPairs = rest.filter(([i, j]) => isString(i) && isString(j));
  const otherPairs = rest.filter((pair) => !stringPairs.includes(pair));
  const strings = stringPairs.length > 0 ? exactlyOneString(t, choices, path, untyped) : null;
  const numeric = otherPairs.length > 0 ? exactlyOneNumberRange(t, choices, otherPairs, path) : null;
  const handled = (i: number): boolean => numeric?.branches.has(i) === true || strings?.branches.has(i) === true;
  // Branches that only list constants are written as one enum: its texts a trie, where a plain choice
  // of literals would let xgrammar 0.1.27 read ("1.25" | "1.5") as a loop (ebnfLiteralChoice). For
  // oneOf they are apart already (different constants), so the enum means the same.
  const listed = choices.map((branch, i) => (handled(i) ? null : onlyConstants(branch)));
  const values = listed.flatMap((v) => v ?? []);
  const parts = choices.map((branch, i) => (handled(i) || listed[i] !== null ? null : t.schema(branch, pointer(path, keyword, i)))).filter((p): p is string => p !== null);
  if (values.length > 0) {
    const body = t.schema({ enum: values }, pointer(path, keyword));
    if (body !== null) parts.push(body);
  }
  if (numeric?.body) parts.push(numeric.body);
  if (strings?.body) parts.push(strings.body);
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}

/** Whether a (dereferenced) branch says `type` and every type it allows is among `types`. */
function typeWithin(branch: Json, types: Json | undefined): boolean {
  const allowed = typeof types === 'string' ? [types] : Array.isArray(types) ? types : [];
  const own = isObject(branch) ? branch['type'] : undefined;
  const listed = typeof own === 'string' ? [own] : Array.isArray(own) ? own : [];
  return listed.length > 0 && listed.every((type) => allowed.includes(type) || (type === 'integer' && allowed.includes('number')));
}

/** The values a branch lists where it says nothing but `const` or `enum` (and annotations); null otherwise. */
function onlyConstants(branch: Json): Json[] | null {
  if (!isObject(branch) || Object.keys(branch).some((k) => k !== 'const' && k !== 'enum' && !ANNOTATIONS.has(k))) return null;
  if (branch['const'] !== undefined) return branch['enum'] === undefined ? [branch['const']] : null;
  return Array.isArray(branch['enum']) ? branch['enum'] : null;
}

/**
 * Whether no value can match both subschemas: different types, different constants, objects with
 * a required property of different constants, or objects where one requires a key the other cannot have.
 */
function disjoint(t: Translation, a: Json, b: Json, path: string, depth = 0): boolean {
  const x = flat(t, a, path);
  const y = flat(t, b, path);
  if (!isObject(x) || !isObject(y)) return false;
  // A union is apart from a subschema when each of its branches is (siblings beside the union only narrow it).
  if (depth < MAX_UNION_DEPTH)
    for (const [u, v] of [
      [x, y],
      [y, x],
    ] as const)
      for (const k of ['anyOf', 'oneOf']) if (Array.isArray(u[k]) && u[k].every((branch) => disjoint(t, branch, v, path, depth + 1))) return true;
  // Objects with more keys than the other allows.
  if ((onlyObjects(t, x, path) && fewestKeys(x) > mostKeys(y)) || (onlyObjects(t, y, path) && fewestKeys(y) > mostKeys(x))) return true;
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
  // A key both require, whose values are apart (constants, patterns such as `^Abs$` and `^Add$`, or deeper): where both write objects only.
  const objectsOnly = (node: SchemaObject): boolean => t.typesOf(node, path).every((type) => type === 'object');
  if (objectsOnly(x) && objectsOnly(y))
    for (const key of Object.keys(px)) {
      if (!rx.includes(key) || !ry.includes(key) || py[key] === undefined) continue;
      if (depth < MAX_UNION_DEPTH && disjoint(t, px[key]!, py[key]!, path, depth + 1)) return true;
    }
  if (disjointStrings(t, x, y, path)) return true;
  // Arrays whose items are apart, one of them never empty.
  if (onlyArrays(x) && onlyArrays(y) && shareOnlyEmpty(t, x, y, path) === 'array' && (minItems(x) > 0 || minItems(y) > 0)) return true;
  return onlyObjects(t, x, path) && onlyObjects(t, y, path) && apart(t, x, y, path) && apart(t, y, x, path);
}

const minItems = (node: SchemaObject): number => (typeof node['minItems'] === 'number' ? node['minItems'] : 0);

/** Unions (and values of required keys) nested one in another that disjoint() opens, at the most. */
const MAX_UNION_DEPTH = 4;

const requiredKeys = (node: SchemaObject): string[] => (Array.isArray(node['required']) ? node['required'].filter((k): k is string => typeof k === 'string') : []);
/** The fewest keys an object of the subschema has: its required ones, or minProperties. */
const fewestKeys = (node: SchemaObject): number => Math.max(new Set(requiredKeys(node)).size, typeof node['minProperties'] === 'number' ? node['minProperties'] : 0);
const mostKeys = (node: SchemaObject): number => (typeof node['maxProperties'] === 'number' ? node['maxProperties'] : Number.POSITIVE_INFINITY);

/**
 * Whether no object the grammar writes for `p` is valid under `q`: p requires a key q cannot have,
 * or q requires a key p's grammar never writes (under the strict reading, one p does not name).
 * The grammar's objects are valid under p, so one such key either way keeps the two apart.
 */
function apart(t: Translation, p: SchemaObject, q: SchemaObject, path: string): boolean {
  return requiredKeys(p).some((key) => cannotHave(t, q, key, path, 'schema')) || requiredKeys(q).some((key) => cannotHave(t, p, key, path, 'grammar'));
}

/**
 * Whether the only value both subschemas may hold is the empty object: both are objects whose keys
 * additionalProperties: false limits to their properties, and every property both name is apart
 * (or false on one side), so a shared object has no key.
 */
function shareOnlyEmpty(t: Translation, a: Json, b: Json, path: string): 'object' | 'array' | null {
  const x = flat(t, a, path);
  const y = flat(t, b, path);
  if (!isObject(x) || !isObject(y)) return null;
  if (onlyArrays(x) && onlyArrays(y)) {
    // Arrays whose items are apart share only [] (both allow it, or they would be disjoint already).
    const itemsOf = (node: SchemaObject): Json | undefined => (node['prefixItems'] === undefined && !Array.isArray(node['items']) ? (node['items'] ?? true) : undefined);
    const [ix, iy] = [itemsOf(x), itemsOf(y)];
    return ix !== undefined && iy !== undefined && disjoint(t, ix, iy, path) ? 'array' : null;
  }
  const closed = (node: SchemaObject): boolean => node['additionalProperties'] === false && node['patternProperties'] === undefined && node['unevaluatedProperties'] === undefined;
  if (!onlyObjects(t, x, path) || !onlyObjects(t, y, path) || !closed(x) || !closed(y)) return null;
  const px = isObject(x['properties']) ? x['properties'] : {};
  const py = isObject(y['properties']) ? y['properties'] : {};
  const apartKeys = Object.keys(px)
    .filter((key) => Object.hasOwn(py, key))
    .every((key) => t.deref(px[key]!, path) === false || t.deref(py[key]!, path) === false || disjoint(t, px[key]!, py[key]!, path));
  return apartKeys ? 'object' : null;
}

/** Whether the grammar writes only arrays for the subschema (`type: "array"` and array keywords only). */
function onlyArrays(node: SchemaObject): boolean {
  const typed = node['type'] === 'array' || (Array.isArray(node['type']) && node['type'].length === 1 && node['type'][0] === 'array');
  return typed && !['enum', 'const', 'anyOf', 'oneOf', 'allOf', '$ref', 'not', 'contains'].some((k) => node[k] !== undefined);
}

/**
 * The branches without the empty object or array two of them share: each one that writes only
 * objects (arrays) has at least one key (item). The others need nothing: each is apart from a
 * branch that holds {} ([]), so it never writes it.
 */
function withoutEmpty(t: Translation, branches: readonly Json[], empties: ReadonlySet<'object' | 'array'>, path: string): readonly Json[] {
  if (empties.size === 0) return branches;
  return branches.map((branch) => {
    const x = flat(t, branch, path);
    if (!isObject(x)) return branch;
    if (empties.has('object') && onlyObjects(t, x, path)) return { allOf: [branch, { minProperties: 1 }] };
    return empties.has('array') && onlyArrays(x) ? { allOf: [branch, { minItems: 1 }] } : branch;
  });
}

/**
 * Whether the grammar writes only objects for the subschema: `type: "object"`, or no type and
 * only object keywords (no combinator, reference or constant that could bring other values).
 */
function onlyObjects(t: Translation, node: SchemaObject, path: string): boolean {
  if (node['type'] === 'object' || (Array.isArray(node['type']) && node['type'].length === 1 && node['type'][0] === 'object')) return true;
  if (node['type'] !== undefined || ['enum', 'const', 'anyOf', 'oneOf', 'allOf', '$ref'].some((k) => node[k] !== undefined)) return false;
  const types = t.typesOf(node, path);
  return types.length === 1 && types[0] === 'object';
}

/**
 * Whether no object the subschema allows has the key: its property false, or not named where no
 * other key is allowed — as JSON Schema reads it ('schema'), or as the grammar writes it
 * ('grammar': absent additionalProperties is false under the strict reading).
 */
function cannotHave(t: Translation, node: SchemaObject, key: string, path: string, reading: 'schema' | 'grammar'): boolean {
  const properties = isObject(node['properties']) ? node['properties'] : {};
  if (Object.hasOwn(properties, key)) return t.deref(properties[key]!, path) === false;
  const strict = reading === 'grammar' && t.options.absentAdditionalProperties === 'forbid' && node['additionalProperties'] === undefined && node['unevaluatedProperties'] === undefined;
  if (node['additionalProperties'] !== false && !strict) return false;
  const patterns = isObject(node['patternProperties']) ? Object.keys(node['patternProperties']) : [];
  return patterns.every((source) => {
    try {
      return !new RegExp(source, 'u').test(key);
    } catch {
      return false;
    }
  });
}

/** The subschema behind its $refs with its allOf merged, as the translation reads it (unmerged where the merge is refused: the translation names that). */
function flat(t: Translation, node: Json, path: string): Json {
  const target = t.deref(node, path);
  if (!isObject(target) || !Array.isArray(target['allOf'])) return target;
  try {
    return mergeAllOf(t, target, path);
  } catch (error) {
    if (error instanceof SchemaUnsupported) return target;
    throw error;
  }
}

/** The JSON kinds a schema's values can have, where its const / enum or type says; null where it does not. */
function kinds(t: Translation, node: SchemaObject, path: string): Set<string> | null {
  const values = constants(node);
  if (values) return new Set([...values].map((v) => kindOf(JSON.parse(v) as Json)));
  if (node['type'] === undefined) return null;
  return new Set(t.typesOf(node, path).map((type) => (type === 'integer' ? 'number' : type)));
}
