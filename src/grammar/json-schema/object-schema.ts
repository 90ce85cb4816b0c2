// `object` schemas: the named properties in the schema's order (each optional one skippable; in
// any order where SchemaGrammarOptions.propertyOrder says so and the guard follows the keys),
// then the further properties additionalProperties (or unevaluatedProperties: false) allows, with
// keys other than the named ones; patternProperties and propertyNames as property-keys.ts writes
// them; what presence-constraints.ts says about which keys appear (dependencies, oneOf over
// `required`, min/maxProperties) as a walk whose state each member rule carries. Pure.

import { ebnfLiteral } from '../grammar-spec.js';
import { canComplete, type KeyCounts, objectKeyRule, stringConstants } from './any-order.js';
import type { GrammarRules } from './grammar-rules.js';
import { KeyLanguage } from './key-language.js';
import { MAX_MEMBER_RULES, objectPresence, PresenceWalk, type PresenceState, keysOf } from './presence-constraints.js';
import { PropertyKeys } from './property-keys.js';
import { isObject, type Json, pointer, type SchemaObject, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

interface NamedMember {
  readonly name: string;
  readonly body: string;
  readonly required: boolean;
}

/** An object's members as the grammar writes them: the named ones (in the schema's order), and the unnamed member (null: no other key). */
interface Members {
  readonly named: readonly NamedMember[];
  readonly extra: string | null;
}

export function objectSchema(t: Translation, node: SchemaObject, path: string): string | null {
  const properties = isObject(node['properties']) ? node['properties'] : {};
  const required = new Set(Array.isArray(node['required']) ? node['required'].filter((r): r is string => typeof r === 'string') : []);
  let additional: Json | undefined = node['additionalProperties'];
  if (additional === undefined && node['unevaluatedProperties'] === false) additional = false;
  else if (node['unevaluatedProperties'] !== undefined && node['unevaluatedProperties'] !== true && additional === undefined)
    throw new SchemaUnsupported('unevaluatedProperties', pointer(path, 'unevaluatedProperties'), 'is translated only as false');
  const extraSchema: Json = additional === undefined ? t.options.absentAdditionalProperties === 'allow' : additional;
  const keys = PropertyKeys.of(t, node, path, extraSchema === false);
  const presence = objectPresence(t, node, path);
  const mentioned = presence === null ? [] : keysOf(presence.objects);
  // Names propertyNames lists are slots too: as unnamed members, one could be written twice.
  const slotted = [...mentioned, ...(keys.listedNames() ?? [])];
  const members = (): Members | null => {
    const extraBody = t.schemaBeneath(extraSchema, pointer(path, 'additionalProperties'), { otherKey: true });
    // A key `required` or a presence constraint names and `properties` does not, where the schema
    // says nothing of other keys: any value, as JSON Schema reads it, even when unnamed keys are not
    // generated ('forbid') — the schema asks for the key, and leaving it out could allow no document.
    const askedBody = additional === undefined ? t.rules.anyValue() : extraBody;
    const asked = new Set([...required, ...mentioned]);
    const named = namedMembers(t, keys, properties, required, slotted, { extraBody, askedBody, asked }, path);
    if (named === null) return null;
    // Unnamed keys are none of these: not a property the schema names (even one whose schema is
    // false, which has no slot), nor a key a constraint names or propertyNames lists.
    const excluded = [...new Set([...Object.keys(properties), ...named.map((p) => p.name), ...slotted])];
    const other = keys.otherMember(t, excluded, extraBody);
    return { named, extra: other !== undefined ? other : extraBody === null ? null : t.rules.share('extra_member', `${extraKey(t.rules, excluded)} ": " ${extraBody}`) };
  };
  const written = members();
  if (written === null) return null;
  const minProperties = typeof node['minProperties'] === 'number' ? Math.max(0, Math.ceil(node['minProperties'])) : 0;
  const maxProperties = typeof node['maxProperties'] === 'number' ? Math.floor(node['maxProperties']) : null;
  if (t.inAnyOrder(node)) {
    const narrowing = t.narrowing(node);
    const after = narrowing === null ? null : { key: narrowing.key, members: t.atPlace(narrowing.place, members) };
    return anyOrderObject(t, node, written, after, { presence: presence?.objects ?? true, minProperties, maxProperties }, path);
  }
  const { named, extra } = written;
  const walk = new PresenceWalk(
    presence?.objects ?? true,
    named.map((p) => p.name),
    minProperties,
    maxProperties,
    extra !== null,
  );
  const constrained = presence !== null || minProperties > 0 || maxProperties !== null;
  const refusal = presence?.keyword ?? (minProperties > 0 ? 'minProperties' : 'maxProperties');
  const inner = memberRules(t, named, extra, walk, constrained ? pointer(path, refusal) : null);
  if (inner === null) return null;
  return t.rules.share('object', inner === '""' ? '"{" "}"' : `"{" ${inner} "}"`);
}

/**
 * An object in any key order: a loop over its members (each named property, and the unnamed
 * member where other keys are allowed); that no key comes twice, every required one comes and
 * the keys meet what the object says of them (its presence statement and counts) is the guard's
 * (any-order.ts), told here what this grammar's members are. Where a key tells it from the other
 * objects at its place (`after`), the members after that key are written at its own place.
 */
function anyOrderObject(t: Translation, node: SchemaObject, before: Members, after: { readonly key: string; readonly members: Members | null } | null, counts: KeyCounts, path: string): string | null {
  const { named, extra } = before;
  const properties = isObject(node['properties']) ? node['properties'] : {};
  const constants = new Map<string, readonly string[]>();
  for (const { name } of named) {
    const listed = stringConstants(properties[name], (schema) => t.deref(schema, pointer(path, 'properties', name)));
    if (listed !== null) constants.set(name, listed);
  }
  // Beside patternProperties (always closed: property-keys.ts), the unnamed keys are the patterns' language less the names.
  const patterns = isObject(node['patternProperties']) ? Object.keys(node['patternProperties']) : [];
  const language = extra === null || patterns.length === 0 ? null : KeyLanguage.of(patterns);
  if (extra !== null && patterns.length > 0 && language === null) throw new Error(`${path}: an object in any order beside patterns its guard cannot follow`);
  const rule = objectKeyRule(
    named.map((p) => p.name),
    named.filter((p) => p.required).map((p) => p.name),
    extra === null ? 'none' : (language ?? 'any'),
    constants,
    counts,
  );
  // No keys that meet what the object says of them (Glaive's "all four required, and exactly one of them"): no value, as in the schema's order.
  if (!canComplete(rule, [], null)) return null;
  t.followKeys(node, rule);
  const member = (written: Members, without: string | null): string | null => {
    const members = [...written.named.filter((p) => p.name !== without).map(namedMember), ...(written.extra === null ? [] : [written.extra])];
    return members.length === 0 ? null : t.rules.share('any_order_member', members.join(' | '));
  };
  const key = after === null ? undefined : named.find((p) => p.name === after.key);
  if (after !== null && key !== undefined) {
    // The key is required (any-order.ts's discriminatorKey): once, between the members before it and those after.
    const first = member(before, after.key);
    const rest = after.members === null ? null : member(after.members, after.key);
    return t.rules.share('object', `"{" ${first === null ? '' : `(${first} ", ")* `}${namedMember(key)}${rest === null ? '' : ` (", " ${rest})*`} "}"`);
  }
  const all = member(before, null);
  if (all === null) return t.rules.share('object', '"{" "}"');
  return t.rules.share('object', `"{" (${all} (", " ${all})*)? "}"`);
}

const namedMember = (p: NamedMember): string => `${ebnfLiteral(JSON.stringify(p.name))} ": " ${p.body}`;

/**
 * The named properties in the schema's order, then the names only additionalProperties or
 * patternProperties cover that are required (they must appear) or that a presence constraint
 * names (a slot of their own, so the walk sees them and unnamed keys never spell them); a name
 * that cannot appear has no slot. null where a required one cannot appear.
 */
function namedMembers(
  t: Translation,
  keys: PropertyKeys,
  properties: SchemaObject,
  required: ReadonlySet<string>,
  mentioned: readonly string[],
  bodies: { readonly extraBody: string | null; readonly askedBody: string | null; readonly asked: ReadonlySet<string> },
  path: string,
): NamedMember[] | null {
  const named: NamedMember[] = [];
  for (const name of new Set([...Object.keys(properties), ...required, ...mentioned])) {
    const patterns = keys.patternSchemas(name);
    let body: string | null = null;
    if (keys.allows(name) && !patterns.includes(false)) {
      if (Object.hasOwn(properties, name))
        body = t.schemaBeneath(patterns.length === 0 ? properties[name]! : { allOf: [properties[name]!, ...patterns] }, pointer(path, 'properties', name), { key: name });
      else if (patterns.length > 0) body = t.schemaBeneath({ allOf: patterns }, pointer(path, 'patternProperties'), { key: name });
      else body = bodies.asked.has(name) ? bodies.askedBody : bodies.extraBody;
    }
    if (body !== null) named.push({ name, body, required: required.has(name) });
    else if (required.has(name)) return null;
  }
  return named;
}

/**
 * The object's members: the named ones in order (each optional one skippable), then the unnamed
 * ones, as the walk allows. members(i, first, state) is the rest from the i-th named property on;
 * first: no comma before the next one; state: what the presence constraints still ask. Equal
 * states share one rule; null where no choice of the rest meets them (no rule written).
 * `bounded`: where to refuse past MAX_MEMBER_RULES (null: no constraint, one rule per property).
 */
function memberRules(t: Translation, named: readonly NamedMember[], extra: string | null, walk: PresenceWalk, bounded: string | null): string | null {
  let written = 0;
  const count = (): void => {
    if (bounded !== null && ++written > MAX_MEMBER_RULES)
      throw new SchemaUnsupported(bounded.slice(bounded.lastIndexOf('/') + 1), bounded, `needs more than ${MAX_MEMBER_RULES} grammar rules for the combinations of properties it allows`);
  };
  // unnamed(min, max, first): between min and max unnamed members (max may be Infinity).
  const unnamedMemo = new Map<string, string | null>();
  const unnamed = (min: number, max: number, first: boolean): string | null => {
    if (max === 0) return '""';
    if (extra === null) return min === 0 ? '""' : null;
    if (min === 0 && max === Number.POSITIVE_INFINITY) return first ? `(${extra} (", " ${extra})*)?` : `(", " ${extra})*`;
    const key = `${min}:${max}:${first}`;
    if (unnamedMemo.has(key)) return unnamedMemo.get(key)!;
    count();
    const rest = unnamed(Math.max(0, min - 1), max - 1, false);
    const one = rest === null ? null : `${first ? '' : '", " '}${extra} ${rest}`;
    const name = one === null ? null : t.rules.share('unnamed_members', min > 0 ? one : `(${one})?`);
    unnamedMemo.set(key, name);
    return name;
  };
  const memo = new Map<string, string | null>();
  const members = (i: number, first: boolean, state: PresenceState): string | null => {
    const key = `${i}:${first}:${walk.id(state)}`;
    if (memo.has(key)) return memo.get(key)!;
    count();
    let body: string | null;
    if (i === named.length) {
      const range = walk.unnamedRange(state);
      body = range === null ? null : unnamed(range.min, range.max, first);
    } else {
      const p = named[i]!;
      const after = walk.next(state, i, true);
      const rest = after === null ? null : members(i + 1, false, after);
      const present = rest === null ? null : `${first ? '' : '", " '}${ebnfLiteral(JSON.stringify(p.name))} ": " ${p.body} ${rest}`;
      const skipped = p.required ? null : walk.next(state, i, false);
      const absent = skipped === null ? null : members(i + 1, first, skipped);
      body = present === null ? absent : absent === null ? present : `${present} | ${absent}`;
    }
    const name = body === null || body === '""' ? body : t.rules.share('members', body);
    memo.set(key, name);
    return name;
  };
  const start = walk.start();
  return start === null ? null : members(0, true, start);
}

const classChar = (code: number): string => (code <= 0xffff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\U${code.toString(16).padStart(8, '0')}`);

/**
 * One character of a key (no quote, backslash or control character) other than the given ones.
 * xgrammar (0.1.27) holds a negated class only when its characters are ASCII and in ascending
 * order: out of order, its token masks refused characters the class allows (`[^"\\\u0000-\u001Fb]`
 * refused "q"), and a non-ASCII character in it is not excluded at all. So the ASCII exclusions are
 * written sorted; where a non-ASCII character must be excluded, only ASCII characters are offered
 * there (a narrower key set, never a named key twice).
 */
function keyCharOtherThan(excluded: readonly number[]): string {
  const ascii = [...new Set([0x22, 0x5c, ...excluded.filter((c) => c < 0x80)])].sort((a, b) => a - b);
  if (excluded.every((c) => c < 0x80)) return `[^\\u0000-\\u001F${ascii.map(classChar).join('')}]`;
  const allowed: string[] = [];
  let from = 0x20;
  for (const c of [...ascii, 0x80]) {
    if (c > from) allowed.push(c - 1 === from ? classChar(from) : `${classChar(from)}-${classChar(c - 1)}`);
    from = Math.max(from, c + 1);
  }
  return `[${allowed.join('')}]`;
}

/**
 * A key other than the named ones: a trie of the names, leaving it at any step by a character
 * none of them has there (written as itself, no escape, so an escape can never spell a name), each
 * step's rule ending with the closing quote; after leaving, the rest is any string's rest.
 */
function extraKey(rules: GrammarRules, names: readonly string[]): string {
  type Node = { end: boolean; children: Map<number, Node> };
  const trie: Node = { end: false, children: new Map() };
  for (const name of names) {
    let at = trie;
    for (const ch of name) {
      const code = ch.codePointAt(0)!;
      if (code < 0x20 || code === 0x22 || code === 0x5c) break;
      let next = at.children.get(code);
      if (!next) at.children.set(code, (next = { end: false, children: new Map() }));
      at = next;
    }
    at.end = true;
  }
  const rest = rules.stringRest();
  const walk = (node: Node): string => {
    const parts: string[] = [];
    if (!node.end) parts.push('"\\""');
    // Its own rule, shared by every step leaving on the same characters: xgrammar computes a mask
    // for each position a rule holds, and this one's first character lets almost every token in
    // (~50 ms each on a 152 K vocabulary, where a step's literal characters cost ~5 ms).
    parts.push(rules.share('extra_key_rest', `${keyCharOtherThan([...node.children.keys()])} ${rest}`));
    for (const [code, child] of node.children) parts.push(`${ebnfLiteral(String.fromCodePoint(code))} ${walk(child)}`);
    return rules.share('extra_key_part', parts.join(' | '));
  };
  return rules.share('extra_key', `"\\"" ${walk(trie)}`);
}
