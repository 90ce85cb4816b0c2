// `object` schemas: the named properties in the schema's order (each optional one skippable),
// then the further properties additionalProperties (or unevaluatedProperties: false) allows, with
// keys other than the named ones; patternProperties and propertyNames as property-keys.ts writes
// them; min/maxProperties where the properties already decide them. Pure.

import { ebnfLiteral } from '../grammar-spec.js';
import type { GrammarRules } from './grammar-rules.js';
import { PropertyKeys } from './property-keys.js';
import { isObject, type Json, pointer, type SchemaObject, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

export function objectSchema(t: Translation, node: SchemaObject, path: string): string | null {
  const properties = isObject(node['properties']) ? node['properties'] : {};
  const required = new Set(Array.isArray(node['required']) ? node['required'].filter((r): r is string => typeof r === 'string') : []);
  let additional: Json | undefined = node['additionalProperties'];
  if (additional === undefined && node['unevaluatedProperties'] === false) additional = false;
  else if (node['unevaluatedProperties'] !== undefined && node['unevaluatedProperties'] !== true && additional === undefined)
    throw new SchemaUnsupported('unevaluatedProperties', pointer(path, 'unevaluatedProperties'), 'is translated only as false');
  const extraSchema: Json = additional === undefined ? t.options.absentAdditionalProperties === 'allow' : additional;
  const keys = PropertyKeys.of(t, node, path, extraSchema === false);
  const extraBody = t.schema(extraSchema, pointer(path, 'additionalProperties'));
  // Named properties, then required names only additionalProperties or patternProperties cover (they must appear).
  const named: { name: string; body: string; required: boolean }[] = [];
  for (const [name, schema] of Object.entries(properties)) {
    const patterns = keys.patternSchemas(name);
    const body = keys.allows(name) && !patterns.includes(false) ? t.schema(patterns.length === 0 ? schema : { allOf: [schema, ...patterns] }, pointer(path, 'properties', name)) : null;
    if (body === null) {
      if (required.has(name)) return null;
      continue;
    }
    named.push({ name, body, required: required.has(name) });
  }
  for (const name of required) {
    if (Object.hasOwn(properties, name)) continue;
    const patterns = keys.patternSchemas(name);
    const body = !keys.allows(name) || patterns.includes(false) ? null : patterns.length === 0 ? extraBody : t.schema({ allOf: patterns }, pointer(path, 'patternProperties'));
    if (body === null) return null;
    named.push({ name, body, required: true });
  }
  const names = named.map((p) => p.name);
  const other = keys.otherMember(t, names, extraBody);
  const extra = other !== undefined ? other : extraBody === null ? null : t.rules.share('extra_member', `${extraKey(t.rules, names)} ": " ${extraBody}`);
  const requiredCount = named.filter((p) => p.required).length;
  const minProperties = typeof node['minProperties'] === 'number' ? node['minProperties'] : 0;
  const maxProperties = typeof node['maxProperties'] === 'number' ? node['maxProperties'] : null;
  if (minProperties > requiredCount) throw new SchemaUnsupported('minProperties', pointer(path, 'minProperties'), 'is translated only when the required properties already meet it');
  if (maxProperties !== null && (extra !== null || named.length > maxProperties)) {
    if (maxProperties < requiredCount) return null;
    throw new SchemaUnsupported('maxProperties', pointer(path, 'maxProperties'), 'is translated only when the schema cannot have more properties anyway');
  }
  // members(i, first): the members from the i-th named property on; first: no comma before the next one.
  const memo = new Map<string, string>();
  const members = (i: number, first: boolean): string => {
    const key = `${i}:${first}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let body: string;
    if (i === named.length) {
      body = extra === null ? '""' : first ? `(${extra} (", " ${extra})*)?` : `(", " ${extra})*`;
    } else {
      const p = named[i]!;
      const present = `${first ? '' : '", " '}${ebnfLiteral(JSON.stringify(p.name))} ": " ${p.body} ${members(i + 1, false)}`;
      body = p.required ? present : `${present} | ${members(i + 1, first)}`;
    }
    const name = body === '""' ? '""' : t.rules.share('members', body);
    memo.set(key, name);
    return name;
  };
  const inner = members(0, true);
  return t.rules.share('object', inner === '""' ? '"{" "}"' : `"{" ${inner} "}"`);
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
    const others = keyCharOtherThan([...node.children.keys()]);
    parts.push(`${others} ${rest}`);
    for (const [code, child] of node.children) parts.push(`${ebnfLiteral(String.fromCodePoint(code))} ${walk(child)}`);
    return rules.share('extra_key_part', parts.join(' | '));
  };
  return rules.share('extra_key', `"\\"" ${walk(trie)}`);
}
