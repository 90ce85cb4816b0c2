// `uniqueItems: true` where every item the array may hold comes from a small finite set (enum /
// const, boolean or null items): the grammar tracks the set of values used so far, one rule per
// reachable set, and offers only values not yet used. Open items (any string, number, object) are
// refused by name: no grammar compares two arbitrary values. Pure.

import { ebnfLiteralChoice } from '../grammar-spec.js';
import { ANNOTATIONS, hasType, isObject, type Json, layoutJson, pointer, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

/**
 * The most value sets one array's rule may track. n values make up to 2^n sets (fewer under a
 * small maxItems), each a grammar rule naming the values left: 10 values, or more with maxItems.
 */
export const MAX_UNIQUE_STATES = 1024;

export interface UniqueArray {
  /** The schemas of the first positions (prefixItems, or draft 4–7 tuple items), and where they are. */
  readonly prefix: readonly Json[];
  readonly prefixPath: string;
  /** The schema of the items after them, and where it is. */
  readonly tail: Json;
  readonly tailPath: string;
  readonly minItems: number;
  readonly maxItems: number | null;
}

/** An array of pairwise-unequal items, each from its position's finite set of values; refused by name where a position's values are not such a set. */
export function uniqueArray(t: Translation, array: UniqueArray, path: string): string | null {
  const refuse = (why: string): never => {
    throw new SchemaUnsupported('uniqueItems', pointer(path, 'uniqueItems'), why);
  };
  // Values are compared as JSON Schema compares them (object keys in any order), so values equal
  // in that sense share one class: using one uses them all.
  const classes = new Map<string, number>();
  const domains = new Map<number, { text: string; cls: number }[]>();
  const domainAt = (position: number): { text: string; cls: number }[] => {
    const index = Math.min(position, array.prefix.length);
    const known = domains.get(index);
    if (known) return known;
    const schemaPath = index < array.prefix.length ? pointer(array.prefixPath, index) : array.tailPath;
    const values = finiteValues(t, index < array.prefix.length ? array.prefix[index]! : array.tail, schemaPath);
    if (values === null) refuse(`items at ${schemaPath} are not from a small set of constants (enum, const, boolean or null), and a grammar cannot compare other items with each other`);
    const domain = values!.map((value) => {
      const key = canonicalJson(value);
      if (!classes.has(key)) classes.set(key, classes.size);
      return { text: layoutJson(value), cls: classes.get(key)! };
    });
    domains.set(index, domain);
    return domain;
  };
  const max = array.maxItems ?? Number.POSITIVE_INFINITY;
  // The sets of classes used so far reachable from the empty one (a set's size is the count of
  // items so far), with the values each may add next.
  const states = new Map<bigint, { count: number; next: { text: string; to: bigint }[] }>();
  const pending: bigint[] = [0n];
  while (pending.length > 0) {
    const used = pending.pop()!;
    if (states.has(used)) continue;
    if (states.size >= MAX_UNIQUE_STATES) refuse(`the array's distinct items make more than ${MAX_UNIQUE_STATES} sets of values used so far (one grammar rule each)`);
    const count = popCount(used);
    const next: { text: string; to: bigint }[] = [];
    if (count < max)
      for (const { text, cls } of domainAt(count)) {
        if ((used >> BigInt(cls)) & 1n || next.some((n) => n.text === text)) continue;
        next.push({ text, to: used | (1n << BigInt(cls)) });
        pending.push(used | (1n << BigInt(cls)));
      }
    states.set(used, { count, next });
  }
  // A set is live where the array can still close: enough items, or a value leading to a live set.
  const live = new Set<bigint>();
  for (const [used, state] of [...states].sort((a, b) => b[1].count - a[1].count)) if (state.count >= array.minItems || state.next.some((n) => live.has(n.to))) live.add(used);
  if (!live.has(0n)) return null;
  const names = new Map([...live].map((used) => [used, t.rules.reserve('unique_items')]));
  for (const used of live) {
    const { count, next } = states.get(used)!;
    const parts = count >= array.minItems ? ['"]"'] : [];
    // The separator once before the choice of items, the items a trie: xgrammar 0.1.27 misreads choices of literals sharing a prefix (ebnfLiteralChoice).
    const items = ebnfLiteralChoice(next.filter(({ to }) => live.has(to)).map(({ text, to }) => ({ text, after: names.get(to)! })));
    if (items !== null) parts.push(`${count === 0 ? '' : '", " '}${items}`);
    t.rules.define(names.get(used)!, parts.join(' | '));
  }
  return `("[" ${names.get(0n)})`;
}

/** The values a schema allows where they are a finite list it states (enum / const, boolean, null); null where they are not. */
function finiteValues(t: Translation, schema: Json, path: string): Json[] | null {
  const node = t.deref(schema, path);
  if (node === false) return [];
  if (!isObject(node)) return null;
  const others = Object.keys(node).filter((k) => !ANNOTATIONS.has(k) && k !== 'type' && k !== 'enum' && k !== 'const');
  if (others.length > 0) return null;
  const types = node['type'] === undefined ? null : t.typesOf(node, path);
  let listed: Json[];
  if (node['const'] !== undefined) listed = Array.isArray(node['enum']) && !node['enum'].some((v) => canonicalJson(v) === canonicalJson(node['const']!)) ? [] : [node['const']];
  else if (Array.isArray(node['enum'])) listed = node['enum'];
  else if (types?.every((type) => type === 'boolean' || type === 'null')) listed = [true, false, null];
  else return null;
  return listed.filter((value) => types === null || types.some((type) => hasType(value, type)));
}

/** A JSON value's text with object keys sorted: equal for values JSON Schema calls equal. */
function canonicalJson(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value))
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k]!)}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

function popCount(bits: bigint): number {
  let count = 0;
  for (let rest = bits; rest > 0n; rest >>= 1n) count += Number(rest & 1n);
  return count;
}
