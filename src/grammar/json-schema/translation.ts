// What each keyword family's translation may ask of the whole: the rules being written, the
// options, and the translation of any subschema (for items, properties, branches). The type parts
// (objects, arrays, strings, numbers, combinators) take it as their first argument, so none of
// them imports another and only schema-translator.ts knows them all.

import type { ObjectKeyRule } from './any-order.js';
import type { GrammarRules } from './grammar-rules.js';
import type { PlaceStep } from './guard-places.js';
import type { Json, SchemaGrammarOptions, SchemaObject, TypeName } from './schema-model.js';

export interface Translation {
  readonly rules: GrammarRules;
  readonly options: SchemaGrammarOptions;
  /** Strings whose bounds guard-plan.ts's plan holds are left to the string guard. */
  readonly stringsGuarded: boolean;
  /** Arrays' uniqueItems are left to the guard too (their items are strings it compares as they close). */
  readonly uniqueGuarded: boolean;
  /** Whether this object schema is written in any key order (the guard's plan follows its keys there). */
  inAnyOrder(node: SchemaObject): boolean;
  /** Where an object written in any order here has a key telling it from the others at its place (GuardPlace.narrowing): that key, and the place of its values written after it; null elsewhere. */
  narrowing(node: SchemaObject): { readonly key: string; readonly place: number } | null;
  /** What `write` returns, translated with the values at `place` (an object's values after its narrowing key). */
  atPlace<T>(place: number, write: () => T): T;
  /** What the guard must enforce of the keys of an object written in any order, as the translation wrote it. */
  followKeys(node: SchemaObject, rule: ObjectKeyRule): void;
  /** The EBNF expression for the values a subschema allows; null when it allows none. */
  schema(node: Json, path: string): string | null;
  /** The same for the value under a key or at an item of the value being translated (where the guard's plan places it: some objects are written in any order at one place only). */
  schemaBeneath(node: Json, path: string, step: PlaceStep): string | null;
  /** Follows $refs with nothing beside them, for the checks that look inside a subschema. */
  deref(node: Json, path: string): Json;
  /** The types a schema allows: its `type`, or (without one) those its keywords speak of, or all. */
  typesOf(node: SchemaObject, path: string): TypeName[];
}
