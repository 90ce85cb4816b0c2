// What the string guard (string-guard.ts) enforces beside xgrammar, as places in a document: the
// bounds of a string's length, and arrays whose string items must differ. Counting characters in
// the grammar costs a rule per character (xgrammar 0.1.27 compiles ~77 ms a rule on a 152 K
// vocabulary; its `{m,n}` and nested counters took 16 s to compile or 2 s a mask at 256), and no
// grammar compares two open strings; so where a schema's bounds and uniqueItems sit at places the
// text itself names — a key path, an item index — the grammar writes those strings and arrays
// plainly and the guard counts and compares.
//
// A place is the set of schema alternatives a document can be under there: the conjunctions
// ($ref, allOf) of each choice of anyOf / oneOf branch, split where the branches split. A string
// at a place is guarded only when every alternative there that allows strings bounds them the
// same way, beside the same patterns (pattern-automaton.ts) and no constants; an array only when
// every alternative allowing arrays says uniqueItems and its items can only be strings. Otherwise
// the text cannot tell the guard what holds (a branch chosen by a key written later, say) and the
// plan is refused, leaving the schema to the counted grammar (or its refusal). Keywords the plan
// does not follow (dependentSchemas, not, unevaluatedProperties) only narrow what a place allows;
// the plan is refused where they say anything of lengths or uniqueness, since what they add would
// be something the guard does not enforce.
//
// With objects in any key order (any-order.ts), a place also names the object schemas whose keys
// the guard follows there (any-order-places.ts chooses them). Pure.

import { anyOrderCandidates, onlyStructure } from './any-order.js';
import { AnyOrderPlaces } from './any-order-places.js';
import { type GuardPlace, type GuardPlan, UNBOUNDED } from './guard-places.js';
import { GuardMarks } from './guard-marks.js';
import { type Alternative, allowsType, allStrings, isGuardedLength, type LengthBounds, stringsOf } from './string-bounds.js';
import { isObject, type Json, resolvePointer, type SchemaObject } from './schema-model.js';
import { checkDeadline } from '../translation-deadline.js';

export { GUARDED_LENGTH_ABOVE } from './guard-marks.js';
/** The most places a plan may have, and alternatives a place: past them the schema keeps the counted grammar. */
export const MAX_PLACES = 4096;
export const MAX_ALTERNATIVES = 256;
/** The most patternProperties patterns a place may test a key against (one place per set of them matched). */
export const MAX_KEY_PATTERNS = 4;

/** Keywords whose subschemas narrow a value in ways the plan does not follow. */
const UNFOLLOWED = ['not', 'dependentSchemas', 'dependencies', 'unevaluatedProperties', 'unevaluatedItems', 'propertyNames', 'contains', 'if', 'then', 'else'];

/**
 * The plan for a schema, or null when nothing needs the guard or the text cannot tell it what
 * holds. With `anyOrder`, objects in any key order are planned too where they can be; where the
 * plan cannot hold them, it is tried without them (the schema's order).
 */
export function guardPlan(root: Json, legacy: boolean, absentAdditionalProperties: 'forbid' | 'allow', anyOrder = false): GuardPlan | null {
  if (typeof root !== 'object' || root === null) return null;
  const closedByDefault = absentAdditionalProperties === 'forbid';
  const marks = new GuardMarks(root, anyOrder ? anyOrderCandidates(root, closedByDefault) : new Set());
  // Uniqueness, then without it (the counted grammar's finite sets, or a refusal, take it): the lengths alone may still plan.
  const attempts: [boolean, boolean][] = [
    [true, true],
    [true, false],
    [false, true],
    [false, false],
  ];
  for (const [withObjects, withUnique] of attempts) {
    if (withObjects && marks.objects.size === 0) continue;
    const marked = new Set([...(withUnique ? marks.guarded : marks.long), ...(withObjects ? marks.objects : [])]);
    if (!marked.has(root)) continue;
    try {
      return new PlanBuilder(root, legacy, closedByDefault, marks, { marked, withUnique, withObjects }).build();
    } catch (error) {
      if (!(error instanceof Unplannable)) throw error;
    }
  }
  return null;
}

/** Why no plan: the text would not tell the guard which bound holds, or the plan grew past its limits. */
class Unplannable extends Error {}

const emptyPlace = (): GuardPlace => ({ string: null, unique: false, keys: new Map(), otherKeys: UNBOUNDED, items: [], restItems: UNBOUNDED, objectNodes: [] });

class PlanBuilder {
  private readonly places: GuardPlace[] = [];
  private readonly byKey = new Map<string, number>();
  private readonly ids = new Map<object, number>();
  private readonly pending: { index: number; alternatives: Alternative[] }[] = [];
  private readonly withUnique: boolean;
  /** Where objects in any order are planned: which ones each place follows (null: none are). */
  private readonly anyOrder: AnyOrderPlaces | null;

  constructor(
    private readonly root: Json,
    private readonly legacy: boolean,
    /** Objects without additionalProperties have only the keys they name (SchemaGrammarOptions). */
    private readonly closedByDefault: boolean,
    private readonly marks: GuardMarks,
    /** The subschemas that make a place (else UNBOUNDED); whether arrays' uniqueItems are planned too (else only lengths); whether objects in any order are. */
    private readonly scope: { readonly marked: ReadonlySet<object>; readonly withUnique: boolean; readonly withObjects: boolean },
  ) {
    this.withUnique = scope.withUnique;
    this.anyOrder = scope.withObjects ? new AnyOrderPlaces(root, closedByDefault, marks.objectCandidates) : null;
  }

  build(): GuardPlan {
    this.places.push(emptyPlace());
    this.place(this.expand([this.root]));
    while (this.pending.length > 0) {
      checkDeadline();
      const { index, alternatives } = this.pending.shift()!;
      this.places[index] = this.describe(alternatives);
    }
    const anyOrder = new Set(this.places.flatMap((p) => p.objectNodes));
    const mixed = this.anyOrder?.mixed(anyOrder) ?? new Set<object>();
    return { places: this.places, guardsUnique: this.withUnique, anyOrder, mixed, objectKeys: new Map() };
  }

  /** The index of the place these alternatives make, queued for description when new. */
  private place(alternatives: Alternative[]): number {
    if (!alternatives.some((alternative) => alternative.some((member) => this.scope.marked.has(member)))) return UNBOUNDED;
    const key = alternatives
      .map((alternative) => alternative.map((member) => this.id(member)).join(','))
      .sort()
      .join('|');
    const known = this.byKey.get(key);
    if (known !== undefined) return known;
    if (this.places.length >= MAX_PLACES) throw new Unplannable('more places than MAX_PLACES');
    const index = this.places.length;
    this.places.push(emptyPlace());
    this.byKey.set(key, index);
    this.pending.push({ index, alternatives });
    return index;
  }

  private id(member: object): number {
    let id = this.ids.get(member);
    if (id === undefined) this.ids.set(member, (id = this.ids.size));
    return id;
  }

  private describe(alternatives: Alternative[]): GuardPlace {
    const discriminated = this.discriminated(alternatives);
    if (discriminated !== null) return discriminated;
    for (const alternative of alternatives)
      for (const member of alternative)
        for (const keyword of UNFOLLOWED) if (member[keyword] !== undefined && this.mentionsLength(member[keyword])) throw new Unplannable('a keyword the plan does not follow speaks of lengths');
    const names = new Set<string>();
    let tuple = 0;
    for (const alternative of alternatives)
      for (const member of alternative) {
        if (isObject(member['properties'])) for (const name of Object.keys(member['properties'])) names.add(name);
        const prefix = this.prefixOf(member);
        if (prefix !== null) tuple = Math.max(tuple, prefix.length);
      }
    const keys = new Map<string, number>();
    for (const name of names) keys.set(name, this.place(this.expand(...alternatives.flatMap((a) => this.keyValue(a, name)))));
    const { objectNodes, ...narrowing } = this.anyOrder?.at(alternatives, (a) => this.place(a)) ?? { objectNodes: [] };
    return {
      ...narrowing,
      string: this.stringBounds(alternatives),
      unique: this.withUnique && this.uniqueStrings(alternatives, tuple),
      keys,
      ...this.patternKeys(alternatives),
      otherKeys: this.place(this.expand(...alternatives.flatMap((a) => this.otherKeyValue(a, new Set())))),
      items: Array.from({ length: tuple }, (_, i) => this.place(this.expand(...alternatives.flatMap((a) => this.item(a, i))))),
      restItems: this.place(this.expand(...alternatives.flatMap((a) => this.item(a, null)))),
      objectNodes,
    };
  }

  /**
   * A place of several object alternatives that its first key tells apart: each alternative a
   * single object schema (beside members saying nothing of objects) that is not written in any
   * order, whose first property is the same required key, a string constant different in each.
   * The schema's order writes that key first, so the guard knows the alternative before any other
   * value; the place itself holds only that key. null where the alternatives are not such.
   */
  private discriminated(alternatives: Alternative[]): GuardPlace | null {
    if (alternatives.length < 2 || this.scope.withObjects) return null;
    let key: string | null = null;
    const constants: string[] = [];
    for (const alternative of alternatives) {
      const objects = alternative.filter((m) => !onlyStructure(m));
      const object = objects[0];
      if (objects.length !== 1 || object === undefined || object['type'] !== 'object' || !isObject(object['properties'])) return null;
      const first = Object.keys(object['properties'])[0];
      const value = first === undefined ? null : object['properties'][first];
      const constant = isObject(value) && typeof value['const'] === 'string' ? value['const'] : null;
      const required = Array.isArray(object['required']) && object['required'].includes(first ?? '');
      if (first === undefined || (key !== null && first !== key) || constant === null || !required || constants.includes(constant)) return null;
      key = first;
      constants.push(constant);
    }
    // Only once every alternative qualifies are their places made (making one queues it).
    const places = new Map(constants.map((constant, i) => [constant, this.place([alternatives[i]!])]));
    return { ...emptyPlace(), keys: new Map([[key!, UNBOUNDED]]), discriminator: { key: key!, places } };
  }

  /**
   * The bounds every alternative allowing strings puts on them, when one is the guard's; null when
   * none is; Unplannable when they differ or one says more than lengths.
   */
  private stringBounds(alternatives: Alternative[]): LengthBounds | null {
    const seen = alternatives.map(stringsOf).filter((s) => s !== null);
    const guarded = seen.find((s): s is LengthBounds => s !== 'other' && isGuardedLength(s.min, s.max, s.patterns));
    if (guarded === undefined) return null;
    const same = (s: LengthBounds | 'other'): boolean => s !== 'other' && s.min === guarded.min && s.max === guarded.max && s.patterns.join('\u0000') === guarded.patterns.join('\u0000');
    if (!seen.every(same)) throw new Unplannable('alternatives bound strings differently at one place');
    return guarded;
  }

  /**
   * Whether an array here must hold distinct strings: every alternative allowing arrays says
   * uniqueItems, and every item there can only be a string; Unplannable where some say it and the
   * rest do not, or where items may be other values (their equality is beyond a string comparison).
   */
  private uniqueStrings(alternatives: Alternative[], tuple: number): boolean {
    const arrays = alternatives.filter((a) => a.every((m) => allowsType(m, 'array')));
    const unique = arrays.map((a) => a.some((m) => m['uniqueItems'] === true));
    if (!unique.includes(true)) return false;
    if (unique.includes(false)) throw new Unplannable('alternatives disagree on uniqueItems at one place');
    for (const index of [...Array.from({ length: tuple }, (_, i) => i), null])
      for (const item of this.expand(...arrays.flatMap((a) => this.item(a, index))))
        if (!item.some((m) => m['type'] === 'string' || (Array.isArray(m['type']) && m['type'].length === 1 && m['type'][0] === 'string') || allStrings(m)))
          throw new Unplannable('uniqueItems over items that may be other than strings');
    return true;
  }

  /** What each member says of a named key's value: properties, the patternProperties it matches, else additionalProperties. */
  private keyValue(alternative: Alternative, name: string): Json[][] {
    const values: Json[] = [];
    let named = false;
    for (const member of alternative) {
      const properties = isObject(member['properties']) ? member['properties'] : {};
      let matched = Object.hasOwn(properties, name);
      if (matched) values.push(properties[name]!);
      if (isObject(member['patternProperties']))
        for (const [pattern, value] of Object.entries(member['patternProperties'])) {
          let matches: boolean;
          try {
            matches = new RegExp(pattern, 'u').test(name);
          } catch {
            // A pattern JavaScript cannot read narrows the value, or not: only safe when it says nothing of lengths.
            if (this.mentionsLength(value)) throw new Unplannable('a patternProperties pattern JavaScript cannot read speaks of lengths');
            continue;
          }
          if (!matches) continue;
          values.push(value);
          matched = true;
        }
      named ||= matched || member['additionalProperties'] !== undefined;
      if (!matched && member['additionalProperties'] !== undefined) values.push(member['additionalProperties']);
    }
    // A closed object the key is not named in never has it (the translation's reading of absent additionalProperties).
    return this.closedByDefault && !named ? [] : [values];
  }

  /**
   * Where an unnamed key's value leads by the patterns it matches: one place per set of the
   * patterns here (at most MAX_KEY_PATTERNS of them), the key tested at run time. Nothing where no
   * such place holds a bound.
   */
  private patternKeys(alternatives: Alternative[]): Pick<GuardPlace, 'patternKeys'> {
    const sources = [...new Set(alternatives.flatMap((a) => a.flatMap((m) => (isObject(m['patternProperties']) ? Object.keys(m['patternProperties']) : []))))];
    if (sources.length === 0) return {};
    // Where neither a pattern's values nor the others' hold a bound, which place a key leads to does not matter.
    const pieces = alternatives.flatMap((a) => a.flatMap((m) => [...(isObject(m['patternProperties']) ? Object.values(m['patternProperties']) : []), m['additionalProperties'] ?? true]));
    if (!pieces.some((piece) => this.mentionsLong(piece))) return {};
    if (sources.length > MAX_KEY_PATTERNS) throw new Unplannable('bounded strings under more patternProperties patterns than MAX_KEY_PATTERNS');
    let tests: RegExp[];
    try {
      tests = sources.map((source) => new RegExp(source, 'u'));
    } catch {
      throw new Unplannable('a patternProperties pattern JavaScript cannot read holds bounded strings');
    }
    const places = Array.from({ length: 1 << sources.length }, (_, bits) => {
      const matched = new Set(sources.filter((_, i) => bits & (1 << i)));
      return this.place(this.expand(...alternatives.flatMap((a) => this.otherKeyValue(a, matched))));
    });
    return { patternKeys: { tests, places } };
  }

  /** The value of a key no `properties` names, matching the patterns `matched` (by source): their schemas, else additionalProperties. */
  private otherKeyValue(alternative: Alternative, matched: ReadonlySet<string>): Json[][] {
    const values: Json[] = [];
    let allowed = false;
    for (const member of alternative) {
      const patterns = isObject(member['patternProperties']) ? Object.entries(member['patternProperties']).filter(([source]) => matched.has(source)) : [];
      for (const [, value] of patterns) values.push(value);
      if (patterns.length > 0) allowed = true;
      else if (member['additionalProperties'] !== undefined) {
        values.push(member['additionalProperties']);
        allowed = true;
      }
    }
    // A closed object never has a key nothing allows (the translation's reading of absent additionalProperties).
    return this.closedByDefault && !allowed ? [] : [values];
  }

  /** Item `index` (null: past every tuple), as array-schema.ts reads prefixItems, tuple `items` and additionalItems. */
  private item(alternative: Alternative, index: number | null): Json[][] {
    const values: Json[] = [];
    for (const member of alternative) {
      const prefix = this.prefixOf(member);
      if (prefix !== null && index !== null && index < prefix.length) values.push(prefix[index]!);
      else if (Array.isArray(member['prefixItems'])) values.push(member['items'] ?? true);
      else if (Array.isArray(member['items'])) values.push(member['additionalItems'] ?? true);
      else values.push(member['items'] ?? true);
    }
    return [values];
  }

  private prefixOf(member: SchemaObject): readonly Json[] | null {
    if (Array.isArray(member['prefixItems'])) return member['prefixItems'];
    return Array.isArray(member['items']) ? member['items'] : null;
  }

  /**
   * The alternatives a set of conjunctions makes: each one's $refs and allOf folded in, split at
   * every anyOf / oneOf. A conjunction holding `false` allows nothing and is dropped.
   */
  private expand(...conjunctions: Json[][]): Alternative[] {
    const out = new Map<string, Alternative>();
    // `visited`: the objects already folded in, members and the references passed through (a cycle of them ends there).
    const grow = (done: SchemaObject[], visited: ReadonlySet<object>, todo: Json[]): void => {
      if (out.size > MAX_ALTERNATIVES) throw new Unplannable('more alternatives than MAX_ALTERNATIVES');
      if (todo.length === 0) {
        const members = [...done].sort((a, b) => this.id(a) - this.id(b));
        out.set(members.map((m) => this.id(m)).join(','), members);
        return;
      }
      const [node, ...rest] = todo as [Json, ...Json[]];
      if (node === false) return;
      if (!isObject(node) || visited.has(node)) return grow(done, visited, rest);
      const seen = new Set(visited).add(node);
      const more: Json[] = [];
      if (typeof node['$ref'] === 'string') {
        const target = resolvePointer(this.root, node['$ref']);
        if (target === undefined) throw new Unplannable('a reference does not resolve');
        // Draft 4 to 7 ignore a reference's siblings (so does the translation).
        if (this.legacy) return grow(done, seen, [target, ...rest]);
        more.push(target);
      }
      if (Array.isArray(node['allOf'])) more.push(...node['allOf']);
      const branches = [node['anyOf'], node['oneOf']].filter((b): b is Json[] => Array.isArray(b));
      // Every choice of one branch from each list.
      const choose = (lists: Json[][], chosen: Json[]): void => {
        if (lists.length === 0) return grow([...done, node], seen, [...more, ...chosen, ...rest]);
        for (const branch of lists[0]!) choose(lists.slice(1), [...chosen, branch]);
      };
      choose(branches, []);
    };
    for (const conjunction of conjunctions) grow([], new Set(), conjunction);
    return [...out.values()];
  }

  /** Whether a subschema says anything the plan enforces: a length keyword, or (planning uniqueness) uniqueItems. */
  private mentionsLength(node: Json): boolean {
    return typeof node === 'object' && node !== null && (this.marks.any.has(node) || (this.withUnique && this.marks.unique.has(node)));
  }

  /** Whether a subschema holds something the guard enforces: a length past GUARDED_LENGTH_ABOVE, or (as planned) uniqueItems or an object in any order. */
  private mentionsLong(node: Json): boolean {
    return typeof node === 'object' && node !== null && this.scope.marked.has(node);
  }
}
