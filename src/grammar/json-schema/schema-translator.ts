// The translation's core: a schema to the EBNF expression for its values. It follows local $refs
// (one rule per reference, so recursion works), refuses the keywords no grammar states, folds
// combinators, and hands each type to its part (object-, array-, string-, number-, enum-schema.ts).

import { mergeAllOf } from './all-of-merge.js';
import { conditionalCases } from './conditional-cases.js';
import { unionSchema } from './any-of-union.js';
import { type ObjectKeyRule, reachesAny } from './any-order.js';
import { arraySchema } from './array-schema.js';
import { enumSchema } from './enum-schema.js';
import { GrammarRules } from './grammar-rules.js';
import { guardPlan } from './guard-plan.js';
import { type GuardPlan, type PlaceStep, placeBeneath, ROOT } from './guard-places.js';
import { withNegatedPattern, withoutNegatedTypes } from './negated-types.js';
import { numberSchema } from './number-schema.js';
import { objectSchema } from './object-schema.js';
import { dependentSchemaCases, isPresenceCombinator, objectPresence } from './presence-constraints.js';
import {
  ARRAY_KEYWORDS,
  CONSTRAINING,
  isObject,
  isValidated,
  type Json,
  NUMBER_KEYWORDS,
  OBJECT_KEYWORDS,
  pointer,
  REFUSED,
  resolvePointer,
  type SchemaGrammarOptions,
  type SchemaObject,
  SchemaUnsupported,
  STRING_KEYWORDS,
  TYPES,
  type TypeName,
} from './schema-model.js';
import { formatIsAnnotation } from '../string-formats.js';
import { stringSchema } from './string-schema.js';
import { checkDeadline } from '../translation-deadline.js';
import type { Translation } from './translation.js';

/**
 * Subschemas nested inside one another during a translation, at the most. Only a $ref reaches its
 * own schema again, and a reference alone becomes a rule (refRule), so recursion ends there; but
 * siblings merged into a referenced schema (allOf, anyOf / oneOf siblings, dependencies' cases)
 * make a new schema at each turn, which would expand without end (JSONSchemaBench's o17683 and
 * JSON Schema Store's resjson overflowed the stack). Far deeper than any schema written out.
 */
export const MAX_SCHEMA_DEPTH = 256;

export class SchemaTranslator implements Translation {
  readonly rules = new GrammarRules();
  private readonly refRules = new Map<string, string>();
  private depth = 0;
  /** Draft 4 to 7: `items` as an array is a tuple, and a $ref's siblings are ignored. */
  private readonly legacy: boolean;

  /** Where bounded strings are left to the string guard (null: every bound is in the grammar). */
  readonly guardPlan: GuardPlan | null;

  constructor(
    private readonly root: Json,
    readonly options: SchemaGrammarOptions,
  ) {
    const dialect = isObject(root) && typeof root['$schema'] === 'string' ? root['$schema'] : '';
    this.legacy = /draft-0[3-7]/.test(dialect);
    this.guardPlan = options.guardStrings ? guardPlan(root, this.legacy, options.absentAdditionalProperties, options.propertyOrder === 'any') : null;
  }

  /** Schemas this translation made from a schema's own node (an allOf merged, a $ref beside siblings, negated types folded in): the node each stands for, as the guard's plan knows it. */
  private readonly madeFrom = new WeakMap<object, SchemaObject>();

  private made(node: SchemaObject, from: SchemaObject): SchemaObject {
    this.madeFrom.set(node, from);
    return node;
  }

  private origin(node: SchemaObject): SchemaObject {
    for (let from = this.madeFrom.get(node); from !== undefined; from = this.madeFrom.get(node)) node = from;
    return node;
  }

  /** The guard plan's place of the value being translated (null: not known, as beneath keys the plan tells apart by pattern). */
  private place: number | null = ROOT;

  inAnyOrder(node: SchemaObject): boolean {
    const origin = this.origin(node);
    const plan = this.guardPlan;
    if (plan === null || !plan.anyOrder.has(origin)) return false;
    // Written in any order at some places and in the schema's at others: here as the plan says of this place (the schema's where unknown).
    return !plan.mixed.has(origin) || (this.place !== null && plan.places[this.place]!.objectNodes.includes(origin));
  }

  narrowing(node: SchemaObject): { readonly key: string; readonly place: number } | null {
    const place = this.place === null ? undefined : this.guardPlan?.places[this.place];
    const index = place?.narrowing === undefined ? -1 : place.objectNodes.indexOf(this.origin(node));
    return index < 0 ? null : { key: place!.narrowing!.key, place: place!.narrowing!.places[index]! };
  }

  atPlace<T>(place: number, write: () => T): T {
    const saved = this.place;
    this.place = place;
    try {
      return write();
    } finally {
      this.place = saved;
    }
  }

  schemaBeneath(node: Json, path: string, step: PlaceStep): string | null {
    const saved = this.place;
    this.place = this.stepPlace(step);
    try {
      return this.schema(node, path);
    } finally {
      this.place = saved;
    }
  }

  /**
   * Where the guard will find a value under `step` (guard-frames.ts's valuePlace, before a key's
   * patterns are tested); unknown beneath a discriminator, whose value picks the place only as
   * the output is read.
   */
  private stepPlace(step: PlaceStep): number | null {
    const place = this.place === null ? undefined : this.guardPlan?.places[this.place];
    return place === undefined || place.discriminator !== undefined ? null : placeBeneath(place, step);
  }

  followKeys(node: SchemaObject, rule: ObjectKeyRule): void {
    this.guardPlan?.objectKeys.set(this.origin(node), rule);
  }

  get stringsGuarded(): boolean {
    return this.guardPlan !== null;
  }

  get uniqueGuarded(): boolean {
    return this.guardPlan?.guardsUnique === true;
  }

  schema(node: Json, path: string): string | null {
    if (this.depth >= MAX_SCHEMA_DEPTH)
      throw new SchemaUnsupported(
        '$ref',
        path.length > 200 ? `${path.slice(0, 100)}…${path.slice(-100)}` : path,
        `nests subschemas more than ${MAX_SCHEMA_DEPTH} deep: a reference that leads back to itself with other keywords merged in at each turn expands without end`,
      );
    checkDeadline();
    this.depth++;
    try {
      return this.translate(node, path);
    } finally {
      this.depth--;
    }
  }

  private translate(node: Json, path: string): string | null {
    if (node === true) return this.rules.anyValue();
    if (node === false) return null;
    if (!isObject(node)) throw new SchemaUnsupported('schema', path, 'is neither an object nor a boolean');
    // if / then / else as cases split by the key the conditions ask (refused by name where they ask more).
    const conditional = conditionalCases(this, node, path);
    if (conditional !== null) return this.schema(this.made(conditional, node), path);
    for (const keyword of Object.keys(REFUSED)) if (node[keyword] !== undefined) throw new SchemaUnsupported(keyword, pointer(path, keyword), REFUSED[keyword]!);
    // A format no validator knows is an annotation: it neither makes the schema a string schema nor constrains one.
    if (typeof node['format'] === 'string' && formatIsAnnotation(node['format'])) {
      const { format: _, ...rest } = node;
      return this.schema(rest, path);
    }
    if (typeof node['$ref'] === 'string') {
      const siblings = Object.keys(node).filter((k) => k !== '$ref' && isValidated(k));
      if (this.legacy || siblings.length === 0) return this.refRule(node['$ref'], pointer(path, '$ref'));
      const { $ref, ...rest } = node;
      return this.schema(this.made({ ...rest, allOf: [...(Array.isArray(rest['allOf']) ? rest['allOf'] : []), { $ref }] }, node), path);
    }
    // Only annotations and unknown keywords: any value, as `true` (the strict reading of absent
    // additionalProperties is for object schemas, and this one says nothing of objects).
    if (!Object.keys(node).some((k) => CONSTRAINING.has(k) || k === 'type' || k === 'enum' || k === 'const')) return this.rules.anyValue();
    if (Array.isArray(node['allOf'])) return this.schema(this.made(mergeAllOf(this, node, path), node), path);
    // anyOf / oneOf over subschemas that only require keys are what object-schema.ts writes, not a union.
    if (Array.isArray(node['anyOf']) && !isPresenceCombinator(this, node, 'anyOf', path)) return unionSchema(this, node, 'anyOf', path);
    if (Array.isArray(node['oneOf']) && !isPresenceCombinator(this, node, 'oneOf', path)) return unionSchema(this, node, 'oneOf', path);
    const typed = withoutNegatedTypes(this, node, path) ?? withNegatedPattern(this, node, path);
    if (typed !== null) return this.schema(this.made(typed, node), path);
    const cases = dependentSchemaCases(this, node, path);
    if (cases !== null) return this.alternatives(cases.map((c) => this.schema(c, path)));
    if (node['enum'] !== undefined || node['const'] !== undefined) return enumSchema(this, node, path);
    // What the presence constraints say of values that are not objects (`not: {required: [...]}` excludes them all).
    const presence = objectPresence(this, node, path);
    return this.alternatives(this.typesOf(node, path).map((type) => (type === 'object' || presence === null || presence.others ? this.typed(node, type, path) : null)));
  }

  private alternatives(bodies: (string | null)[]): string | null {
    const alternatives = bodies.filter((b): b is string => b !== null);
    if (alternatives.length === 0) return null;
    return alternatives.length === 1 ? alternatives[0]! : `(${alternatives.join(' | ')})`;
  }

  typesOf(node: SchemaObject, path: string): TypeName[] {
    const declared = node['type'];
    if (declared !== undefined) {
      const list = Array.isArray(declared) ? declared : [declared];
      for (const t of list) if (typeof t !== 'string' || !(TYPES as readonly string[]).includes(t)) throw new SchemaUnsupported('type', pointer(path, 'type'), `unknown type ${JSON.stringify(t)}`);
      const types = list as TypeName[];
      // "number" already includes the integers.
      return types.includes('number') ? types.filter((t) => t !== 'integer') : types;
    }
    const has = (keys: readonly string[]): boolean => keys.some((k) => node[k] !== undefined);
    const inferred: TypeName[] = [];
    if (has(OBJECT_KEYWORDS)) inferred.push('object');
    if (has(ARRAY_KEYWORDS)) inferred.push('array');
    if (has(STRING_KEYWORDS)) inferred.push('string');
    if (has(NUMBER_KEYWORDS)) inferred.push('number');
    return inferred.length > 0 ? inferred : ['object', 'array', 'string', 'number', 'boolean', 'null'];
  }

  private typed(node: SchemaObject, type: TypeName, path: string): string | null {
    switch (type) {
      case 'null':
        return '"null"';
      case 'boolean':
        return '("true" | "false")';
      case 'integer':
      case 'number':
        return numberSchema(this, node, type, path);
      case 'string':
        return stringSchema(this, node, path);
      case 'array':
        return arraySchema(this, node, path);
      case 'object':
        return objectSchema(this, node, path);
    }
  }

  // ---- references -------------------------------------------------------------------------

  private resolve(ref: string, path: string): Json {
    if (ref !== '#' && !ref.startsWith('#/')) throw new SchemaUnsupported('$ref', path, `only local references are supported, got ${JSON.stringify(ref)}`);
    const node = resolvePointer(this.root, ref);
    if (node === undefined) throw new SchemaUnsupported('$ref', path, `${JSON.stringify(ref)} does not resolve`);
    return node;
  }

  private readonly mixedBeneath = new Map<Json, boolean>();

  private reachesMixed(target: Json): boolean {
    let known = this.mixedBeneath.get(target);
    if (known === undefined) this.mixedBeneath.set(target, (known = reachesAny(this.root, target, this.guardPlan!.mixed)));
    return known;
  }

  deref(node: Json, path: string): Json {
    for (let hops = 0; isObject(node) && typeof node['$ref'] === 'string' && hops < 32; hops++) {
      const constraining = Object.keys(node).filter((k) => k !== '$ref' && isValidated(k));
      if (constraining.length > 0 && !this.legacy) return node;
      node = this.resolve(node['$ref'], path);
    }
    return node;
  }

  private refRule(ref: string, path: string): string {
    // One rule per reference, or per reference and place where an object beneath it is written in any order at some places only.
    const key = this.guardPlan !== null && this.guardPlan.mixed.size > 0 && this.reachesMixed(this.resolve(ref, path)) ? `${ref}@${this.place}` : ref;
    const known = this.refRules.get(key);
    if (known) return known;
    const name = this.rules.reserve(`ref_${ref.split('/').at(-1) ?? 'root'}`);
    this.refRules.set(key, name);
    const body = this.schema(this.resolve(ref, path), ref);
    if (body === null) throw new SchemaUnsupported('$ref', path, `${JSON.stringify(ref)} allows no value`);
    this.rules.define(name, body);
    return name;
  }
}
