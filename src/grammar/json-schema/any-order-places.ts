// Which object schemas written in any key order (any-order.ts) a guard plan's place (guard-places.ts)
// follows the keys of: one per alternative allowing objects, each the only member of its
// alternative saying anything of objects, and several only where keys and string constants tell
// them apart; an object schema found anywhere else beside others keeps the schema's order
// everywhere (its grammar rule is one). Where a key every one of several requires tells them
// apart, the values after it are at the one object still alive's own place (GuardPlace.narrowing).
// Pure.

import { allOfParts, discriminatorKey, distinguishable, mergedView, onlyStructure, presenceParts } from './any-order.js';
import type { GuardPlace } from './guard-places.js';
import { type Alternative, allowsType } from './string-bounds.js';
import { isObject, type Json, resolvePointer, type SchemaObject } from './schema-model.js';

/** The any-order part of one plan's making: what each place follows, and which objects keep the schema's order somewhere. */
export class AnyOrderPlaces {
  /** Object schemas found where the guard could not follow their keys: they keep the schema's order. */
  private readonly ordered = new Set<object>();

  constructor(
    private readonly root: Json,
    /** Objects without additionalProperties have only the keys they name (SchemaGrammarOptions). */
    private readonly closedByDefault: boolean,
    /** The object schemas that may be written in any key order (any-order.ts's anyOrderCandidates). */
    private readonly candidates: ReadonlySet<object>,
  ) {}

  /**
   * A place's objects in any order, and where a key tells several apart, their own places;
   * `place` makes (or finds) the place of a set of alternatives.
   */
  at(alternatives: Alternative[], place: (alternatives: Alternative[]) => number): Pick<GuardPlace, 'narrowing' | 'objectNodes'> {
    const objectNodes = this.objectNodes(alternatives);
    return { ...this.narrowing(alternatives, objectNodes, place), objectNodes };
  }

  /** Those of the objects written in any order that were also met where the guard could not follow their keys (GuardPlan.mixed). */
  mixed(anyOrder: ReadonlySet<object>): Set<object> {
    return new Set([...anyOrder].filter((node) => this.ordered.has(node)));
  }

  /**
   * The object schemas whose keys the guard follows at a place: in each alternative allowing
   * objects, its one candidate beside members that say nothing of objects; several only where the
   * guard can tell them apart as the output goes (any-order.ts's distinguishable). Every candidate
   * met otherwise keeps the schema's order (everywhere: its grammar rule is one).
   */
  private objectNodes(alternatives: Alternative[]): object[] {
    const candidates = alternatives.flatMap((a) => a.filter((m) => this.candidates.has(m)));
    if (candidates.length === 0) return [];
    const objects = alternatives.filter((a) => a.every((m) => allowsType(m, 'object')));
    const chosen = objects.map((a) => {
      // An allOf written merged, in any order: the subschemas it merges are that object's, not objects of their own here.
      const all = a.filter((m) => candidates.includes(m));
      const merged = new Set(all.flatMap((m) => [...allOfParts(this.root, m)]));
      const whole = all.filter((m) => !merged.has(m));
      // An open object naming nothing (a union's `type: "object"` sibling) says nothing beside another.
      const own = whole.length > 1 ? whole.filter((m) => !onlyStructure(m) || Array.isArray(m['allOf'])) : whole;
      if (own.length !== 1) return null;
      // The object's own anyOf / oneOf over `required` split the place; its statement is in its key rule.
      const parts = new Set([...presenceParts(this.root, own[0]!), ...allOfParts(this.root, own[0]!)]);
      return a.every((m) => m === own[0] || onlyStructure(m) || parts.has(m)) ? own[0]! : null;
    });
    const distinct = [...new Set(chosen)];
    if (distinct.every((c) => c !== null) && (distinct.length === 1 || distinguishable(this.views(distinct), this.closedByDefault, this.resolveRef))) return distinct;
    for (const candidate of candidates) this.ordered.add(candidate);
    return [];
  }

  /** Where several objects in any order have a discriminating key: each one's own place (the alternatives it is the object of), for the values after that key. */
  private narrowing(alternatives: Alternative[], objectNodes: readonly object[], place: (alternatives: Alternative[]) => number): Pick<GuardPlace, 'narrowing'> {
    if (objectNodes.length < 2) return {};
    const key = discriminatorKey(this.views(objectNodes), this.resolveRef);
    if (key === null) return {};
    return { narrowing: { key, places: objectNodes.map((node) => place(alternatives.filter((a) => a.includes(node as SchemaObject)))) } };
  }

  private readonly resolveRef = (node: Json): Json => (isObject(node) && typeof node['$ref'] === 'string' ? (resolvePointer(this.root, node['$ref']) ?? node) : node);

  /** The object schemas as what each says of its keys: a merged allOf by its merge. */
  private views(objects: readonly object[]): SchemaObject[] {
    return objects.map((o) => (Array.isArray((o as SchemaObject)['allOf']) ? mergedView(this.root, o as SchemaObject)! : (o as SchemaObject)));
  }
}
