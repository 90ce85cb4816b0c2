// What an object schema says about which keys an object has, beyond `required`: dependencies
// (draft 4–7, as lists or as subschemas that only require), dependentRequired, dependentSchemas
// that only require, `not` / `anyOf` / `oneOf` / `allOf` over subschemas that only require, and
// min/maxProperties. Collected as one Boolean statement over the keys' presence, and walked as
// object-schema.ts writes the named properties in order: after each one (present or skipped) the
// statement is simplified to what is still open, so two orders of choices that leave the same
// statement and count share the rest of the grammar, and a choice that can no longer be satisfied
// writes nothing. dependentSchemas (and schema dependencies) that say more than `required` are
// split in two cases here too: the key absent, or the key present and the subschema merged in. Pure.

import { mergeAllOf } from './all-of-merge.js';
import { ANNOTATIONS, isObject, isValidated, type Json, pointer, type SchemaObject, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

/** A Boolean statement about an object's keys: true / false, every key present, and the combinators of such statements. */
export type Presence =
  | boolean
  | { readonly all: readonly string[] }
  | { readonly not: Presence }
  | { readonly some: readonly Presence[] }
  | { readonly one: readonly Presence[] }
  | { readonly every: readonly Presence[] };

/** A subschema's statement about objects' keys, and whether it holds for the values that are not objects. */
export interface PresenceReading {
  readonly objects: Presence;
  readonly others: boolean;
}

/** Schema dependencies split into cases per object schema; past this many, refused (each one doubles the object's grammar). */
export const MAX_SCHEMA_DEPENDENCIES = 3;
/** Member rules one object's walk may write; past this many states, refused (the translation stays cheap). */
export const MAX_MEMBER_RULES = 4096;

const DEPENDENCY_KEYWORDS = ['dependencies', 'dependentRequired', 'dependentSchemas'] as const;
/** The keywords whose subschemas may be statements about the enclosing object's keys rather than schemas of their own. */
export const PRESENCE_COMBINATORS: readonly string[] = ['anyOf', 'oneOf', 'allOf', 'not'];
const implies = (key: string, then: Presence): Presence => ({ some: [{ not: { all: [key] } }, then] });
const names = (value: Json): string[] | null => (Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : null);

/**
 * What a subschema says if it only speaks of which keys an object has (required, the combinators
 * of such subschemas, `type: "object"`, the dependency keywords as lists); null if it says more.
 * Keywords no validator knows are ignored, as everywhere.
 */
export function presenceOf(t: Pick<Translation, 'deref'>, schema: Json, path: string): PresenceReading | null {
  const node = t.deref(schema, path);
  if (typeof node === 'boolean') return { objects: node, others: node };
  if (!isObject(node)) return null;
  const objects: Presence[] = [];
  let others = true;
  for (const [keyword, value] of Object.entries(node)) {
    if (ANNOTATIONS.has(keyword) || !isValidated(keyword)) continue;
    if (keyword === 'type' && (value === 'object' || (Array.isArray(value) && value.length === 1 && value[0] === 'object'))) others = false;
    else if (keyword === 'required' && names(value)) objects.push({ all: names(value)! });
    else if (PRESENCE_COMBINATORS.includes(keyword) && value !== null) {
      const reading = combinator(t, keyword as 'anyOf' | 'oneOf' | 'allOf' | 'not', value, pointer(path, keyword));
      if (reading === null) return null;
      objects.push(reading.objects);
      others &&= reading.others;
    } else if (DEPENDENCY_KEYWORDS.includes(keyword as never) && isObject(value)) {
      for (const [key, dependent] of Object.entries(value)) {
        const list = names(dependent);
        const reading = list ? { objects: { all: list }, others: true } : keyword === 'dependentRequired' ? null : presenceOf(t, dependent, pointer(path, keyword, key));
        if (reading === null) return null;
        objects.push(simplify(implies(key, reading.objects)));
      }
    } else return null;
  }
  return { objects: simplify({ every: objects }), others };
}

/** anyOf / oneOf / allOf / not over subschemas that only speak of keys; null where one says more. */
function combinator(t: Pick<Translation, 'deref'>, keyword: 'anyOf' | 'oneOf' | 'allOf' | 'not', value: Json, path: string): PresenceReading | null {
  if (keyword === 'not') {
    const inner = presenceOf(t, value, path);
    return inner && { objects: simplify({ not: inner.objects }), others: !inner.others };
  }
  if (!Array.isArray(value) || value.length === 0) return null;
  const readings: PresenceReading[] = [];
  for (const [i, branch] of value.entries()) {
    const reading = presenceOf(t, branch, pointer(path, i));
    if (reading === null) return null;
    readings.push(reading);
  }
  const statements = readings.map((r) => r.objects);
  const truths = readings.filter((r) => r.others).length;
  if (keyword === 'anyOf') return { objects: simplify({ some: statements }), others: truths > 0 };
  if (keyword === 'oneOf') return { objects: simplify({ one: statements }), others: truths === 1 };
  return { objects: simplify({ every: statements }), others: truths === readings.length };
}

/** Whether the node's anyOf / oneOf only speaks of keys (then object-schema.ts enforces it, not a union of branches). */
export function isPresenceCombinator(t: Translation, node: SchemaObject, keyword: 'anyOf' | 'oneOf', path: string): boolean {
  return combinator(t, keyword, node[keyword]!, pointer(path, keyword)) !== null;
}

/**
 * Everything an object schema says about its keys' presence besides `required` (which
 * object-schema.ts writes as required members), as one statement; null when it says nothing.
 * `not` that says more than keys is refused by name, as before.
 */
export function objectPresence(t: Translation, node: SchemaObject, path: string): (PresenceReading & { readonly keyword: string }) | null {
  const objects: Presence[] = [];
  let others = true;
  let first: string | null = null;
  // allOf is merged before an object schema is written, so it is not among them.
  for (const keyword of ['anyOf', 'oneOf', 'not', ...DEPENDENCY_KEYWORDS] as const) {
    const value = node[keyword];
    if (value === undefined) continue;
    const at = pointer(path, keyword);
    let reading: PresenceReading | null;
    if (keyword === 'anyOf' || keyword === 'oneOf' || keyword === 'not') reading = combinator(t, keyword, value, at);
    else reading = isObject(value) ? presenceOf(t, { [keyword]: value }, path) : null;
    if (reading === null) {
      if (keyword === 'not') throw new SchemaUnsupported('not', at, 'a grammar cannot exclude what a subschema matches (only subschemas that speak of which keys are present are translated)');
      throw new SchemaUnsupported(keyword, at, 'is translated only where its subschemas speak of which keys are present');
    }
    objects.push(reading.objects);
    others &&= reading.others;
    first ??= keyword;
  }
  return first === null ? null : { objects: simplify({ every: objects }), others, keyword: first };
}

/**
 * The first schema dependency that says more than `required`, as schemas that together mean the
 * node: objects without the key (its property false), objects with it (the subschema merged in),
 * and the node's values that are not objects (which dependencies never constrain). null where
 * there is none. Refused past MAX_SCHEMA_DEPENDENCIES (each doubles the object's grammar).
 */
export function dependentSchemaCases(t: Translation, node: SchemaObject, path: string): SchemaObject[] | null {
  const found: { keyword: string; key: string; schema: Json }[] = [];
  for (const keyword of ['dependencies', 'dependentSchemas']) {
    const value = node[keyword];
    if (!isObject(value)) continue;
    for (const [key, schema] of Object.entries(value)) if (!names(schema) && presenceOf(t, schema, pointer(path, keyword, key)) === null) found.push({ keyword, key, schema });
  }
  if (found.length === 0) return null;
  const { keyword, key, schema } = found[0]!;
  const { [key]: _, ...others } = node[keyword] as SchemaObject;
  const rest: { [k: string]: Json } = { ...node, [keyword]: others };
  if (Object.keys(others).length === 0) delete rest[keyword];
  const types = t.typesOf(node, path);
  const otherTypes = types.filter((type) => type !== 'object');
  const cases: SchemaObject[] = otherTypes.length > 0 ? [{ ...rest, type: otherTypes }] : [];
  if (!types.includes('object')) return cases;
  if (found.length > MAX_SCHEMA_DEPENDENCIES)
    throw new SchemaUnsupported(
      found[MAX_SCHEMA_DEPENDENCIES]!.keyword,
      pointer(path, found[MAX_SCHEMA_DEPENDENCIES]!.keyword, found[MAX_SCHEMA_DEPENDENCIES]!.key),
      `more than ${MAX_SCHEMA_DEPENDENCIES} dependent subschemas on one object are not translated (each one doubles its grammar)`,
    );
  // A property whose schema is false never appears (and no unnamed key spells it).
  cases.push({ ...rest, type: 'object', properties: { ...(isObject(rest['properties']) ? rest['properties'] : {}), [key]: false } });
  cases.push(mergeAllOf(t, { ...rest, type: 'object', allOf: [{ required: [key] }, schema] }, pointer(path, keyword, key)));
  return cases;
}

/** Every key a statement names. */
export function keysOf(statement: Presence): string[] {
  const out = new Set<string>();
  const walk = (s: Presence): void => {
    if (typeof s === 'boolean') return;
    if ('all' in s) for (const k of s.all) out.add(k);
    else if ('not' in s) walk(s.not);
    else for (const part of 'some' in s ? s.some : 'one' in s ? s.one : s.every) walk(part);
  };
  walk(statement);
  return [...out];
}

/** Whether the statement holds of an object with exactly these keys. */
export function holds(statement: Presence, present: ReadonlySet<string>): boolean {
  if (typeof statement === 'boolean') return statement;
  if ('all' in statement) return statement.all.every((key) => present.has(key));
  if ('not' in statement) return !holds(statement.not, present);
  if ('some' in statement) return statement.some.some((part) => holds(part, present));
  if ('one' in statement) return statement.one.filter((part) => holds(part, present)).length === 1;
  return statement.every.every((part) => holds(part, present));
}

/** The statement with the key's presence decided, simplified: what is still open about the other keys. */
export function decide(statement: Presence, key: string, present: boolean): Presence {
  const walk = (s: Presence): Presence => {
    if (typeof s === 'boolean') return s;
    if ('all' in s) {
      if (!s.all.includes(key)) return s;
      return present ? simplify({ all: s.all.filter((k) => k !== key) }) : false;
    }
    if ('not' in s) return simplify({ not: walk(s.not) });
    if ('some' in s) return simplify({ some: s.some.map(walk) });
    if ('one' in s) return simplify({ one: s.one.map(walk) });
    return simplify({ every: s.every.map(walk) });
  };
  return walk(statement);
}

/** One level of simplification (parts already simple): decided parts folded, single parts unwrapped. */
function simplify(s: Presence): Presence {
  if (typeof s === 'boolean') return s;
  if ('all' in s) return s.all.length === 0 ? true : s;
  if ('not' in s) {
    if (typeof s.not === 'boolean') return !s.not;
    return typeof s.not === 'object' && 'not' in s.not ? s.not.not : s;
  }
  if ('every' in s) {
    const parts = s.every.flatMap((p) => (typeof p === 'object' && 'every' in p ? p.every : [p])).filter((p) => p !== true);
    if (parts.includes(false)) return false;
    return parts.length === 0 ? true : parts.length === 1 ? parts[0]! : { every: parts };
  }
  if ('some' in s) {
    const parts = s.some.filter((p) => p !== false);
    if (parts.includes(true)) return true;
    return parts.length === 0 ? false : parts.length === 1 ? parts[0]! : { some: parts };
  }
  // oneOf: one true part leaves "none of the others"; false parts drop out.
  const open = s.one.filter((p) => p !== false && p !== true);
  const truths = s.one.filter((p) => p === true).length;
  if (truths > 1) return false;
  if (truths === 1) return open.length === 0 ? true : simplify({ every: open.map((p) => simplify({ not: p })) });
  return open.length === 0 ? false : open.length === 1 ? open[0]! : { one: open };
}

/** Where an object's walk stands after some named properties: what is still open, and how many keys it has (capped where the count no longer matters). */
export interface PresenceState {
  readonly open: Presence;
  readonly count: number;
}

/**
 * The walk over an object's named properties (`slots`, in the order the grammar writes them),
 * then the unnamed ones (`extraKeys`: whether any may appear). Keys the statement names that have
 * no slot can never appear: decided absent at the start.
 */
export class PresenceWalk {
  private readonly cap: number;

  constructor(
    private readonly statement: Presence,
    private readonly slots: readonly string[],
    private readonly minProperties: number,
    private readonly maxProperties: number | null,
    private readonly extraKeys: boolean,
  ) {
    this.cap = maxProperties !== null ? maxProperties + 1 : minProperties;
  }

  start(): PresenceState | null {
    let open = this.statement;
    for (const key of keysOf(open)) if (!this.slots.includes(key)) open = decide(open, key, false);
    return this.alive({ open, count: 0 }, 0);
  }

  /** The state after slot i is present or skipped; null where the object can no longer meet the schema. */
  next(state: PresenceState, i: number, present: boolean): PresenceState | null {
    const open = decide(state.open, this.slots[i]!, present);
    return this.alive({ open, count: Math.min(state.count + (present ? 1 : 0), this.cap) }, i + 1);
  }

  /** A key for the state (with the slot index, what the rest of the grammar depends on). */
  id(state: PresenceState): string {
    return `${state.count}:${JSON.stringify(state.open)}`;
  }

  /** After the last slot: how many unnamed members may follow; null where none can complete the object. */
  unnamedRange(state: PresenceState): { readonly min: number; readonly max: number } | null {
    if (state.open !== true) return null;
    const min = Math.max(0, this.minProperties - state.count);
    const max = this.maxProperties === null ? Number.POSITIVE_INFINITY : this.maxProperties - state.count;
    if (!this.extraKeys) return min === 0 ? { min: 0, max: 0 } : null;
    return { min, max };
  }

  private alive(state: PresenceState, from: number): PresenceState | null {
    if (state.open === false) return null;
    if (this.maxProperties !== null && state.count > this.maxProperties) return null;
    if (!this.extraKeys && state.count + (this.slots.length - from) < this.minProperties) return null;
    return state;
  }
}
