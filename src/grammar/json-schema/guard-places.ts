// What a guard plan is (guard-plan.ts makes one from a schema): its places — what the string
// guard enforces of a value there and where each key and item of it leads — and the place beneath
// a place by one step. Both walks of a plan take those steps the same way: the translation's, as
// it writes each value (schema-translator.ts), and the guard's, as it reads the output
// (guard-frames.ts). Pure.

import type { GuardOpener } from '../guard-opener.js';
import type { ObjectKeyRule } from './any-order.js';
import type { LengthBounds } from './string-bounds.js';

/** One place: the bounds a string there meets (null: none the guard enforces), and where each key and item leads. */
export interface GuardPlace {
  readonly string: LengthBounds | null;
  /** An array here holds strings that must differ (uniqueItems over string items: the guard compares them as they close). */
  readonly unique: boolean;
  /** A named key's value: its place. */
  readonly keys: ReadonlyMap<string, number>;
  /** Any other key's value: by the patternProperties patterns it matches (places[bits of the patterns matched]), else otherKeys. */
  readonly patternKeys?: { readonly tests: readonly RegExp[]; readonly places: readonly number[] };
  readonly otherKeys: number;
  /** The item at each index before the rest. */
  readonly items: readonly number[];
  readonly restItems: number;
  /** The object schemas written in any key order here, one per alternative allowing objects, whose keys the guard follows (their rules in GuardPlan.objectKeys); empty: none. */
  readonly objectNodes: readonly object[];
  /**
   * Objects whose first key (`key`, required, a string constant in each) tells the alternatives
   * apart: once its value is read, the object is at that alternative's own place (tool calls by
   * their `name`, a union by its leading `type`), so the others' bounds never meet it.
   */
  readonly discriminator?: { readonly key: string; readonly places: ReadonlyMap<string, number> };
  /**
   * Objects in any key order that a key every one requires tells apart (`key`, a string constant
   * in each: any-order.ts's discriminatorKey), written anywhere among the others: values written
   * after it are at the one object still alive's own place (places, by objectNodes index), so
   * what differs between the objects beneath (a CWL tool's `inputs[]` by its `class`) is followed
   * there; values before it stay at this place.
   */
  readonly narrowing?: { readonly key: string; readonly places: readonly number[] };
}

/** The places, by index: UNBOUNDED (0) has nothing guarded beneath it, ROOT (1) is the document. */
export interface GuardPlan {
  readonly places: readonly GuardPlace[];
  /** Whether every array that says uniqueItems is left to the guard (its items are strings at places the plan knows). */
  readonly guardsUnique: boolean;
  /** The object schemas the translation may write in any key order (each one a place's objectNode). */
  readonly anyOrder: ReadonlySet<object>;
  /** Those among them also met where the guard cannot follow their keys (the schema's order there): the translation writes them per place. */
  readonly mixed: ReadonlySet<object>;
  /** What the guard enforces of each such object's keys, as the translation wrote it (filled as it writes them). */
  readonly objectKeys: Map<object, ObjectKeyRule>;
  /** Where the document is free text with JSON values each after this opener (tool calls under auto); absent: the output is one JSON document. */
  readonly opener?: GuardOpener;
}
export const UNBOUNDED = 0;
export const ROOT = 1;

/** Where a value sits beneath another: under a named key, under any other key, or at an item (null: past the tuple). */
export type PlaceStep = { readonly key: string } | { readonly otherKey: true } | { readonly item: number | null };

/**
 * The place beneath `place` by `step`: an item's (past the tuple, the rest's), a named key's
 * value's, any other key's. null where the place's patternProperties decide (patternKeys): which
 * place an unnamed key leads to depends on the patterns its text matches, tested only where the
 * key's text is known (guard-frames.ts's keyPlace).
 */
export function placeBeneath(place: GuardPlace, step: { readonly item: number | null }): number;
export function placeBeneath(place: GuardPlace, step: PlaceStep): number | null;
export function placeBeneath(place: GuardPlace, step: PlaceStep): number | null {
  if ('item' in step) return step.item === null ? place.restItems : (place.items[step.item] ?? place.restItems);
  const named = 'key' in step ? place.keys.get(step.key) : undefined;
  return named ?? (place.patternKeys === undefined ? place.otherKeys : null);
}
