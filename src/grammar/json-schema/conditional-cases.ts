// `if` / `then` / `else` where every condition asks one key of an object for a few constants
// (`if: {properties: {errorHandler: {const: "PHP"}}}`, with `required` of that key, `type:
// "object"`, or an anyOf of such on the same key): the value is split into cases by that key —
// absent, each constant a condition names, any other value, and values that are not objects — and
// in each case every condition is known, so its `then` or its `else` is merged in. The cases are
// apart by the key, so their union is exactly the schema. JSON Schema Store writes switches this
// way, one `{if, then}` per constant under allOf; each condition on the same key is one split. Pure.

import { ANNOTATIONS, isObject, type Json, layoutJson, pointer, type SchemaObject, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

/** What a condition asks: the key's value among `values` (or the key absent), the key present where `requiresKey`, and an object where `objectsOnly`. */
interface Condition {
  readonly key: string;
  readonly values: readonly Json[];
  readonly requiresKey: boolean;
  readonly objectsOnly: boolean;
}

interface Conditional {
  readonly condition: Condition;
  /** The `then` and `else` subschemas (named apart: an object with `then` reads as a promise). */
  readonly whenHolds: Json;
  readonly whenFails: Json;
}

const CONDITIONAL_WORDS = new Set(['if', 'then', 'else']);

/** The node as a union of cases where it (or an allOf member that is only a conditional) says `if`; null where nothing does. */
export function conditionalCases(t: Translation, node: SchemaObject, path: string): SchemaObject | null {
  const members = Array.isArray(node['allOf']) ? node['allOf'] : [];
  const isConditional = (member: Json): boolean => {
    const resolved = t.deref(member, path);
    return isObject(resolved) && resolved['if'] !== undefined && Object.keys(resolved).every((k) => CONDITIONAL_WORDS.has(k) || ANNOTATIONS.has(k));
  };
  const conditionalMembers = members.filter(isConditional);
  if (node['if'] === undefined && conditionalMembers.length === 0) return null;
  const where = pointer(path, 'if');
  const sources = [...(node['if'] === undefined ? [] : [node]), ...conditionalMembers.map((m) => t.deref(m, path) as SchemaObject)];
  const conditionals: Conditional[] = sources.map((source) => ({ condition: readCondition(t, source['if']!, where), whenHolds: source['then'] ?? true, whenFails: source['else'] ?? true }));
  const key = conditionals[0]!.condition.key;
  if (conditionals.some((c) => c.condition.key !== key)) throw new SchemaUnsupported('if', where, 'conditions on different keys are not translated');
  const { if: _if, then: _then, else: _else, allOf: _allOf, ...base } = node;
  const others = members.filter((m) => !conditionalMembers.includes(m));
  const rest: SchemaObject = others.length > 0 ? { ...base, allOf: others } : base;
  const named = distinct(conditionals.flatMap((c) => c.condition.values));
  const cases: Json[] = [];
  const add = (restriction: Json, holds: (c: Conditional) => boolean): void => {
    const branches = conditionals.map((c) => (holds(c) ? c.whenHolds : c.whenFails));
    // A branch that allows nothing leaves the case empty.
    if (!branches.some((b) => t.deref(b, path) === false)) cases.push({ allOf: [rest, restriction, ...branches] });
  };
  add({ type: 'object', properties: { [key]: false } }, (c) => !c.condition.requiresKey);
  for (const value of named) add({ type: 'object', required: [key], properties: { [key]: { const: value } } }, (c) => c.condition.values.some((v) => layoutJson(v) === layoutJson(value)));
  const other = otherValues(t, rest, key, named, where);
  if (other !== null) add({ type: 'object', required: [key], properties: { [key]: other } }, () => false);
  const nonObjects = t.typesOf(rest, path).filter((type) => type !== 'object');
  if (nonObjects.length > 0) add({ type: nonObjects }, (c) => !c.condition.objectsOnly);
  return { anyOf: cases };
}

/** A condition as a key asked for constants; refused by name where it asks anything else. */
function readCondition(t: Translation, raw: Json, path: string): Condition {
  const node = t.deref(raw, path);
  if (isObject(node) && Array.isArray(node['anyOf']) && Object.keys(node).every((k) => k === 'anyOf' || ANNOTATIONS.has(k))) {
    // Either of several conditions on one key: its constants together.
    const parts = node['anyOf'].map((part, i) => readCondition(t, part, pointer(path, 'anyOf', i)));
    const first = parts[0];
    if (first !== undefined && parts.every((p) => p.key === first.key && !p.requiresKey && !p.objectsOnly)) return { ...first, values: distinct(parts.flatMap((p) => p.values)) };
  }
  const refuse = (): never => {
    throw new SchemaUnsupported('if', path, 'is translated only where each condition asks one property for constants (properties: {key: {const / enum}}, with required and type object)');
  };
  if (!isObject(node) || Object.keys(node).some((k) => !['properties', 'required', 'type'].includes(k) && !ANNOTATIONS.has(k))) return refuse();
  const properties = isObject(node['properties']) ? Object.entries(node['properties']) : [];
  if (properties.length !== 1 || (node['type'] !== undefined && node['type'] !== 'object')) return refuse();
  const [key, valueSchema] = properties[0]!;
  const required = Array.isArray(node['required']) ? node['required'] : [];
  if (required.some((r) => r !== key)) return refuse();
  const value = t.deref(valueSchema, path);
  if (!isObject(value) || Object.keys(value).some((k) => !['const', 'enum', 'type'].includes(k) && !ANNOTATIONS.has(k))) return refuse();
  const values = value['const'] !== undefined ? [value['const']] : Array.isArray(value['enum']) ? value['enum'] : null;
  // A `type` beside the constants says nothing more where every constant is of it (as JSONSchemaBench's `{type: "string", const: "add"}`).
  if (values === null || (value['type'] !== undefined && !values.every((v) => kindFits(v, value['type']!)))) return refuse();
  return { key, values, requiresKey: required.length > 0, objectsOnly: node['type'] === 'object' };
}

/**
 * A schema for the key's values that no condition names: the rest of the key's own constants where
 * it lists them, else (the named constants all strings) every non-string and every string but
 * them, as `not` over their pattern; null where no value is left.
 */
function otherValues(t: Translation, rest: SchemaObject, key: string, named: readonly Json[], path: string): Json | null {
  const properties = isObject(rest['properties']) ? rest['properties'] : {};
  const own = Object.hasOwn(properties, key) ? t.deref(properties[key]!, path) : undefined;
  const listed = isObject(own) ? (own['const'] !== undefined ? [own['const']] : Array.isArray(own['enum']) ? own['enum'] : null) : null;
  if (listed !== null) {
    const left = listed.filter((v) => !named.some((w) => layoutJson(w) === layoutJson(v)));
    return left.length === 0 ? null : { enum: left };
  }
  if (!named.every((v) => typeof v === 'string')) throw new SchemaUnsupported('if', path, 'a condition on constants other than strings is translated only where the property lists its values');
  const pattern = `^(?:${(named as string[]).map(escapeRegex).join('|')})$`;
  return { anyOf: [{ not: { type: 'string' } }, { type: 'string', not: { pattern } }] };
}

const escapeRegex = (text: string): string => text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');

function distinct(values: readonly Json[]): Json[] {
  const seen = new Map<string, Json>();
  for (const value of values) seen.set(layoutJson(value), value);
  return [...seen.values()];
}

function kindFits(value: Json, type: Json): boolean {
  const types = Array.isArray(type) ? type : [type];
  const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : typeof value;
  return types.some((t) => t === kind || (t === 'integer' && typeof value === 'number' && Number.isInteger(value)));
}
