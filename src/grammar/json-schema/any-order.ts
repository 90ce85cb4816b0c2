// Objects written in any key order (SchemaGrammarOptions.propertyOrder 'any'): which object
// schemas may be, and what the string guard must then enforce about their keys. A grammar cannot
// remember which keys an object already has without one rule per subset, so such an object is
// written as a loop over its members (each named property, or an unnamed key the schema allows),
// and the guard (string-guard.ts) holds the rest: no key twice, every required key before `}`, and
// in a closed object only keys still unwritten. What an object says of which keys it has beyond
// `required` — `oneOf` / `anyOf` / `not` over `required`, dependencies as lists, min/maxProperties
// (presence-constraints.ts's one Boolean statement) — the guard holds too: `}` only where the keys
// written meet it, and a key only where the keys written can still be completed to meet it. That
// is exact only for an object schema that says nothing else of its keys, reached only where the
// guard's plan follows the document (properties, items, $refs, combinators); everything else keeps
// the schema's order. Pure.

import { KeyLanguage } from './key-language.js';
import { holds, keysOf, type Presence, presenceOf } from './presence-constraints.js';
import { mergeAllOf } from './all-of-merge.js';
import { ANNOTATIONS, constrains, isObject, type Json, resolvePointer, type SchemaObject, SchemaUnsupported } from './schema-model.js';

/** What the guard enforces about an object written in any order: the translator's own reading of its keys. */
export interface ObjectKeyRule {
  /** The keys the grammar's named members spell, and their JSON text (between the quotes) as bytes. */
  readonly names: readonly string[];
  readonly rawNames: readonly Uint8Array[];
  readonly required: readonly string[];
  /** No key but the named ones (no unnamed member in the grammar). */
  readonly closed: boolean;
  /** Where the unnamed keys are only those patternProperties allow (a closed object beside them): their language; null where any key is. */
  readonly keyLanguage: KeyLanguage | null;
  /** Named keys whose value is one of a few strings (const / enum): what tells this object from another at its place. */
  readonly constants: ReadonlyMap<string, readonly string[]>;
  /** What the object says of its keys beyond `required` (true: nothing), and how many it may have. */
  readonly presence: Presence;
  readonly minProperties: number;
  readonly maxProperties: number | null;
}

/** What an object says of its keys' presence beyond `required`; true, 0 and null where it says nothing. */
export interface KeyCounts {
  readonly presence: Presence;
  readonly minProperties: number;
  readonly maxProperties: number | null;
}
const NO_COUNTS: KeyCounts = { presence: true, minProperties: 0, maxProperties: null };

const encoder = new TextEncoder();

export function objectKeyRule(
  names: readonly string[],
  required: readonly string[],
  unnamed: 'none' | 'any' | KeyLanguage,
  constants: ReadonlyMap<string, readonly string[]>,
  counts: KeyCounts = NO_COUNTS,
): ObjectKeyRule {
  const keyLanguage = typeof unnamed === 'string' ? null : unnamed;
  return { names, rawNames: names.map(rawKey), required, closed: unnamed === 'none', keyLanguage, constants, ...counts };
}

/** A key's JSON text between its quotes, as bytes. */
export const rawKey = (key: string): Uint8Array => encoder.encode(JSON.stringify(key).slice(1, -1));

/** The most keys a presence statement may name for its object to be written in any order (the guard tries every subset of the unwritten ones). */
export const MAX_PRESENCE_KEYS = 12;

/** Whether an object with exactly the keys written may close: every required key, the presence statement, the counts. */
export function isComplete(rule: ObjectKeyRule, used: readonly string[]): boolean {
  const present = new Set(used);
  return rule.required.every((key) => present.has(key)) && holds(rule.presence, present) && used.length >= rule.minProperties && (rule.maxProperties === null || used.length <= rule.maxProperties);
}

/**
 * Whether, after the keys written and then `key` (null: an unnamed one), more keys can still
 * make the object complete: the required keys not yet written, and some subset of the unwritten
 * keys the statement names, meet it with the count in bounds (other unwritten keys, or unnamed
 * ones in an open object, make up a minimum). At most 2^MAX_PRESENCE_KEYS subsets, and only
 * where the object says more than `required`.
 */
export function canComplete(rule: ObjectKeyRule, used: readonly string[], key: string | null): boolean {
  // Most objects say nothing beyond `required`, whose keys are all named members: nothing to try.
  if (rule.presence === true && rule.minProperties === 0 && rule.maxProperties === null) return rule.required.every((k) => rule.names.includes(k) || used.includes(k) || k === key);
  // Asked once per allowed token inside a key: the answers for one frame's keys are kept with its `used` list.
  let byUsed = completions.get(rule);
  if (byUsed === undefined) completions.set(rule, (byUsed = new WeakMap()));
  let answers = byUsed.get(used);
  if (answers === undefined) byUsed.set(used, (answers = new Map()));
  let answer = answers.get(key);
  if (answer === undefined) answers.set(key, (answer = tryCompletions(rule, used, key)));
  return answer;
}
const completions = new WeakMap<ObjectKeyRule, WeakMap<readonly string[], Map<string | null, boolean>>>();

function tryCompletions(rule: ObjectKeyRule, used: readonly string[], key: string | null): boolean {
  const written = key === null ? used : [...used, key];
  const base = new Set([...written, ...rule.required]);
  if (rule.required.some((k) => !written.includes(k) && !rule.names.includes(k))) return false;
  const open = keysOf(rule.presence).filter((k) => !base.has(k) && rule.names.includes(k));
  const fillers = rule.closed ? rule.names.filter((k) => !base.has(k) && !open.includes(k)).length : Number.POSITIVE_INFINITY;
  for (let bits = 0; bits < 1 << open.length; bits++) {
    const all = new Set([...base, ...open.filter((_, i) => bits & (1 << i))]);
    if (rule.maxProperties !== null && all.size > rule.maxProperties) continue;
    if (all.size + fillers < rule.minProperties) continue;
    if (holds(rule.presence, all)) return true;
  }
  return false;
}

/** The strings a schema (a $ref resolved once) allows when it lists them (const / enum of strings only); null otherwise. */
export function stringConstants(schema: Json | undefined, resolve: (node: Json) => Json): readonly string[] | null {
  const node = schema === undefined ? undefined : resolve(schema);
  if (!isObject(node)) return null;
  const listed = node['const'] !== undefined ? [node['const']] : Array.isArray(node['enum']) ? node['enum'] : null;
  return listed !== null && listed.length > 0 && listed.every((v) => typeof v === 'string') ? (listed as string[]) : null;
}

/** Object alternatives at one place past this many keep the schema's order (the guard keeps which are alive as bits). */
export const MAX_OBJECT_ALTERNATIVES = 16;

/**
 * Whether the guard can tell several object schemas at one place apart as the output goes: what
 * kills one is a key it does not allow, or a string value its constants exclude, so every key two
 * of them allow must have the same schema in both (the same text) or be a string constant in each.
 * Keys only patternProperties allow are not followed here: such alternatives keep the order.
 */
export function distinguishable(objects: readonly SchemaObject[], closedByDefault: boolean, resolve: (node: Json) => Json): boolean {
  if (objects.length > MAX_OBJECT_ALTERNATIVES || objects.some((o) => o['patternProperties'] !== undefined)) return false;
  if (discriminatorKey(objects, resolve) !== null) return true;
  const other = (o: SchemaObject): Json | undefined =>
    o['additionalProperties'] === undefined ? (closedByDefault ? undefined : true) : o['additionalProperties'] === false ? undefined : o['additionalProperties'];
  const valueOf = (o: SchemaObject, name: string): Json | undefined => {
    const properties = isObject(o['properties']) ? o['properties'] : {};
    if (Object.hasOwn(properties, name)) return properties[name];
    // A required key the properties do not name is written as additionalProperties says (any value when silent).
    const required = Array.isArray(o['required']) && o['required'].includes(name);
    return other(o) ?? (required && o['additionalProperties'] === undefined ? true : undefined);
  };
  const names = new Set(
    objects.flatMap((o) => [
      ...Object.keys(isObject(o['properties']) ? o['properties'] : {}),
      ...(Array.isArray(o['required']) ? o['required'].filter((r): r is string => typeof r === 'string') : []),
    ]),
  );
  const agree = (values: (Json | undefined)[]): boolean => {
    const present = values.filter((v): v is Json => v !== undefined);
    if (present.length < 2) return true;
    if (present.every((v) => stringConstants(v, resolve) !== null)) return true;
    const text = JSON.stringify(present[0]);
    return present.every((v) => JSON.stringify(v) === text);
  };
  for (const name of names) if (!agree(objects.map((o) => valueOf(o, name)))) return false;
  return agree(objects.map(other));
}

/**
 * A key every object requires whose string constants tell them all apart (CWL's `class`), or
 * null. No object closes before that key is written (it is required), and once it is, one object
 * alone is alive: so keys that others share under other schemas need not agree — the grammar
 * follows each object's values, and the guard closes the one the key names. Values written after
 * it are at that object's own place (GuardPlace.narrowing).
 */
export function discriminatorKey(objects: readonly SchemaObject[], resolve: (node: Json) => Json): string | null {
  const requiredBy = (o: SchemaObject): string[] => (Array.isArray(o['required']) ? o['required'].filter((k): k is string => typeof k === 'string') : []);
  if (objects.length < 2) return null;
  const candidates = requiredBy(objects[0]!).filter((key) => objects.every((o) => requiredBy(o).includes(key)));
  const tellsApart = (key: string): boolean => {
    const seen = new Set<string>();
    for (const o of objects) {
      const properties = isObject(o['properties']) ? o['properties'] : {};
      const listed = Object.hasOwn(properties, key) ? stringConstants(properties[key], resolve) : null;
      if (listed === null || listed.some((value) => seen.has(value))) return false;
      for (const value of listed) seen.add(value);
    }
    return true;
  };
  return candidates.find(tellsApart) ?? null;
}

/** Keywords after which an object's keys are more than a set with required members: such objects keep the schema's order. */
const KEEPS_ORDER = ['$ref', 'if', 'then', 'else', 'dependentSchemas', 'propertyNames', 'unevaluatedProperties', 'enum', 'const'];
/** Keywords the guard holds where they only speak of which keys are present (presence-constraints.ts); otherwise they keep the order. */
const PRESENCE_WORDS = ['anyOf', 'oneOf', 'not', 'dependencies', 'dependentRequired'];
const OBJECT_WORDS = ['properties', 'required', 'additionalProperties', 'patternProperties'];

/** Edges the guard's plan follows from a schema object to the subschemas beneath (and $ref, followed apart). */
const FOLLOWED_MAPS = ['properties', 'patternProperties'];
const FOLLOWED_ONE = ['additionalProperties', 'items', 'additionalItems'];
const FOLLOWED_LISTS = ['prefixItems', 'items', 'allOf', 'anyOf', 'oneOf'];
/** Keywords whose value maps names to subschemas. */
const SCHEMA_MAPS = new Set([...FOLLOWED_MAPS, 'dependentSchemas', 'dependencies']);
/** Containers of definitions: reached through $refs only, so not an edge of their own. */
const DEFINITIONS = new Set(['$defs', 'definitions']);

/** Whether a schema object is an object schema that says only which keys it names, requires and allows beside, and which it has. */
function speaksOnlyOfKeys(root: Json, node: SchemaObject, closedByDefault: boolean): boolean {
  if (Array.isArray(node['allOf'])) {
    // An allOf the translation merges into one object (all-of-merge.ts): the merge must be such an object, its keys one statement.
    const merged = mergedView(root, node);
    return merged !== null && !['allOf', 'anyOf', 'oneOf'].some((k) => merged[k] !== undefined) && speaksOnlyOfKeys(root, merged, closedByDefault);
  }
  if (!OBJECT_WORDS.some((k) => constrains(k, node[k])) && !(node['type'] === 'object' || (Array.isArray(node['type']) && node['type'].includes('object')))) return false;
  if (KEEPS_ORDER.some((k) => node[k] !== undefined)) return false;
  if (PRESENCE_WORDS.some((k) => node[k] !== undefined)) {
    const reading = presenceOf({ deref: derefIn(root) }, Object.fromEntries(PRESENCE_WORDS.filter((k) => node[k] !== undefined).map((k) => [k, node[k]!])), '#');
    if (reading === null || keysOf(reading.objects).length > MAX_PRESENCE_KEYS) return false;
  }
  const closed = node['additionalProperties'] === false || (node['additionalProperties'] === undefined && closedByDefault);
  if (!closed || !isObject(node['patternProperties'])) return true;
  // Keys patternProperties allows in a closed object: the guard follows them as their language (key-language.ts).
  const patterns = Object.keys(node['patternProperties']);
  return patterns.length === 0 || KeyLanguage.of(patterns) !== null;
}

/**
 * The object schemas that may be written in any order: those that speak only of their keys,
 * reachable from the root through the edges the guard's plan follows and not also beneath one it
 * does not (a `contains`, `not`, `if`, a dependency's subschema: the grammar there is not where
 * the guard looks).
 */
export function anyOrderCandidates(root: Json, closedByDefault: boolean): Set<object> {
  const followed = reach(root, [root], true);
  const elsewhere = reach(root, [...unfollowedChildren(followed)], false);
  const out = new Set<object>();
  for (const node of followed) if (!elsewhere.has(node) && !Array.isArray(node) && speaksOnlyOfKeys(root, node as SchemaObject, closedByDefault)) out.add(node);
  // A `required` under an object's own anyOf / oneOf is part of that object's statement, not an object of its own.
  for (const node of [...out]) for (const part of presenceParts(root, node as SchemaObject)) out.delete(part);
  return out;
}

/** A deref for reading statements outside a translation: local $refs resolved against the root. */
const derefIn =
  (root: Json) =>
  (node: Json): Json => {
    for (let hops = 0; isObject(node) && typeof node['$ref'] === 'string' && hops < 32; hops++) node = resolvePointer(root, node['$ref']) ?? false;
    return node;
  };

/**
 * The subschemas beneath an object's own anyOf / oneOf (their allOf and $refs followed) where
 * they only speak of which keys are present: the plan splits the object's place at them, and
 * each split is that one object, its statement held whole by the guard.
 */
export function presenceParts(root: Json, node: SchemaObject): Set<object> {
  const parts = new Set<object>();
  if (!PRESENCE_WORDS.some((k) => node[k] !== undefined)) return parts;
  const pending: Json[] = [...['anyOf', 'oneOf'].flatMap((k) => (Array.isArray(node[k]) ? node[k] : []))];
  while (pending.length > 0) {
    const part = pending.pop()!;
    if (!isObject(part) || parts.has(part)) continue;
    parts.add(part);
    for (const k of ['anyOf', 'oneOf', 'allOf']) if (Array.isArray(part[k])) pending.push(...part[k]);
    if (typeof part['$ref'] === 'string') pending.push(resolvePointer(root, part['$ref']) ?? false);
  }
  return parts;
}

/**
 * The subschemas an allOf is merged from (its parts, references resolved, their own allOf too):
 * where the translation writes the merge as one object in any order, they are that object's.
 */
export function allOfParts(root: Json, node: SchemaObject): Set<object> {
  const parts = new Set<object>();
  const pending: Json[] = Array.isArray(node['allOf']) ? [...node['allOf']] : [];
  while (pending.length > 0) {
    const part = pending.pop()!;
    if (!isObject(part) || parts.has(part)) continue;
    parts.add(part);
    if (Array.isArray(part['allOf'])) pending.push(...part['allOf']);
    if (typeof part['$ref'] === 'string') pending.push(resolvePointer(root, part['$ref']) ?? false);
  }
  return parts;
}

/** A schema beside allOf as the translation merges it, or null where the merge is refused. Memoized per node (asked for candidacy and again per place). */
export function mergedView(root: Json, node: SchemaObject): SchemaObject | null {
  if (merges.has(node)) return merges.get(node)!;
  let merged: SchemaObject | null = null;
  try {
    merged = mergeAllOf({ deref: derefIn(root) }, node, '#');
  } catch (error) {
    if (!(error instanceof SchemaUnsupported)) throw error;
  }
  merges.set(node, merged);
  return merged;
}
const merges = new WeakMap<object, SchemaObject | null>();

/** Whether any of `nodes` is reachable from `start` through the edges the guard's plan follows ($refs too). */
export function reachesAny(root: Json, start: Json, nodes: ReadonlySet<object>): boolean {
  for (const node of reach(root, [start], true)) if (nodes.has(node)) return true;
  return false;
}

/** The schema objects reachable from `starts` ($refs followed): through the followed edges only, or through every child. */
function reach(root: Json, starts: readonly Json[], onlyFollowed: boolean): Set<object> {
  const seen = new Set<object>();
  const pending = starts.filter(isObject);
  while (pending.length > 0) {
    const node = pending.pop()!;
    if (seen.has(node)) continue;
    seen.add(node);
    for (const child of onlyFollowed ? followedChildren(node) : allChildren(node).map(([, c]) => c)) if (isObject(child)) pending.push(child);
    if (typeof node['$ref'] === 'string') {
      const target = resolvePointer(root, node['$ref']);
      if (isObject(target)) pending.push(target);
    }
  }
  return seen;
}

function followedChildren(node: SchemaObject): Json[] {
  const out: Json[] = [];
  for (const key of FOLLOWED_MAPS) if (isObject(node[key])) out.push(...Object.values(node[key]));
  for (const key of FOLLOWED_ONE) if (node[key] !== undefined && !Array.isArray(node[key])) out.push(node[key]!);
  for (const key of FOLLOWED_LISTS) if (Array.isArray(node[key])) out.push(...node[key]);
  return out;
}

/** Every subschema-like value beneath a node, one level down, with the keyword it is under (arrays flattened; definitions and annotations aside). */
function allChildren(node: SchemaObject): [string, Json][] {
  const out: [string, Json][] = [];
  for (const [key, value] of Object.entries(node)) {
    if (DEFINITIONS.has(key) || ANNOTATIONS.has(key) || key === 'enum' || key === 'const') continue;
    const children = Array.isArray(value) ? value : isObject(value) ? (SCHEMA_MAPS.has(key) ? Object.values(value) : [value]) : [];
    for (const child of children) out.push([key, child]);
  }
  return out;
}

const FOLLOWED = new Set([...FOLLOWED_MAPS, ...FOLLOWED_ONE, ...FOLLOWED_LISTS]);

/** The subschemas directly under the followed nodes through a keyword the plan does not follow (the same subschema may be under both). */
function* unfollowedChildren(followed: ReadonlySet<object>): Generator<Json> {
  for (const node of followed) for (const [key, child] of allChildren(node as SchemaObject)) if (!FOLLOWED.has(key)) yield child;
}

const STRUCTURE = new Set(['$ref', 'allOf', 'anyOf', 'oneOf', 'type']);

/** Whether a member of an alternative says nothing of objects: only references, combinators, `type`, keywords no validator reads (annotations, extensions) and subschemas every value meets. */
export function onlyStructure(member: SchemaObject): boolean {
  return Object.keys(member).every((k) => STRUCTURE.has(k) || !constrains(k, member[k]));
}
