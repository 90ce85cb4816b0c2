// `object` schemas: the named properties in the schema's order (each optional one skippable),
// then the further properties additionalProperties (or unevaluatedProperties: false) allows, with
// keys other than the named ones; min/maxProperties where the properties already decide them. Pure.

import { ebnfLiteral } from '../grammar-spec.js';
import type { GrammarRules } from './grammar-rules.js';
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
  const extraBody = t.schema(extraSchema, pointer(path, 'additionalProperties'));
  // Named properties, then required names only additionalProperties covers (they must appear).
  const named: { name: string; body: string; required: boolean }[] = [];
  for (const [name, schema] of Object.entries(properties)) {
    const body = t.schema(schema, pointer(path, 'properties', name));
    if (body === null) {
      if (required.has(name)) return null;
      continue;
    }
    named.push({ name, body, required: required.has(name) });
  }
  for (const name of required) {
    if (Object.hasOwn(properties, name)) continue;
    if (extraBody === null) return null;
    named.push({ name, body: extraBody, required: true });
  }
  const requiredCount = named.filter((p) => p.required).length;
  const minProperties = typeof node['minProperties'] === 'number' ? node['minProperties'] : 0;
  const maxProperties = typeof node['maxProperties'] === 'number' ? node['maxProperties'] : null;
  if (minProperties > requiredCount) throw new SchemaUnsupported('minProperties', pointer(path, 'minProperties'), 'is translated only when the required properties already meet it');
  if (maxProperties !== null && (extraBody !== null || named.length > maxProperties)) {
    if (maxProperties < requiredCount) return null;
    throw new SchemaUnsupported('maxProperties', pointer(path, 'maxProperties'), 'is translated only when the schema cannot have more properties anyway');
  }
  const extra =
    extraBody === null
      ? null
      : t.rules.share(
          'extra_member',
          `${extraKey(
            t.rules,
            named.map((p) => p.name),
          )} ": " ${extraBody}`,
        );
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

/** A key other than the named ones: a trie of the names, leaving it at any step (keys without escapes). */
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
  const plain = `[^"\\\\\\u0000-\\u001F]`;
  const rest = `${plain}*`;
  const walk = (node: Node): string => {
    const parts: string[] = [];
    if (!node.end) parts.push('""');
    const excluded = [...node.children.keys()].sort((a, b) => a - b);
    const others = `[^"\\\\\\u0000-\\u001F${excluded.map((c) => (c <= 0xffff ? `\\u${c.toString(16).padStart(4, '0')}` : `\\U${c.toString(16).padStart(8, '0')}`)).join('')}]`;
    parts.push(`${others} ${rest}`);
    for (const [code, child] of node.children) parts.push(`${ebnfLiteral(String.fromCodePoint(code))} ${walk(child)}`);
    return rules.share('extra_key_part', parts.join(' | '));
  };
  return rules.share('extra_key', `"\\"" ${walk(trie)} "\\""`);
}
