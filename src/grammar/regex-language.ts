// What the translations ask of a parsed pattern (regex-grammar.ts's RegexNode) as a language of
// strings, apart from writing it (regex-ebnf.ts) or taking its derivatives (regex-derivative.ts):
// whether it holds the empty string, its length range, the whole strings a search matches
// (patternLanguage: JSON Schema does not anchor patterns, so an unanchored side gets any
// characters), sequences built no larger than they must be, and the node cut to a string length.
// Pure.

import { ANY_REPEAT, type CharSet, normalize, parsePattern, type RegexNode } from './regex-grammar.js';

/** Whether the node matches the empty string. */
export function nullable(node: RegexNode): boolean {
  switch (node.t) {
    case 'chars':
      return false;
    case 'seq':
      return node.items.every(nullable);
    case 'alt':
      return node.options.some(nullable);
    case 'repeat':
      return node.min === 0 || nullable(node.node);
    case 'and':
      return node.nodes.every(nullable);
    case 'not':
      return !nullable(node.node);
  }
}

/** Every character the node's strings can hold; null for a lookahead's languages (only their automaton tells). */
function alphabet(node: RegexNode): CharSet | null {
  switch (node.t) {
    case 'chars':
      return node.set;
    case 'repeat':
      return node.max === 0 ? [] : alphabet(node.node);
    case 'seq':
    case 'alt': {
      const parts = (node.t === 'seq' ? node.items : node.options).map(alphabet);
      return parts.some((part) => part === null) ? null : normalize((parts as CharSet[]).flat());
    }
    default:
      return null;
  }
}

/** The set S where the node is S* (any string of S's characters), else null. */
export function starSet(node: RegexNode): CharSet | null {
  if (node.t !== 'repeat' || node.min !== 0 || node.max !== null) return null;
  const inner = node.node.t === 'seq' && node.node.items.length === 1 ? node.node.items[0]! : node.node;
  return inner.t === 'chars' ? inner.set : null;
}

const within = (inner: CharSet, outer: CharSet): boolean => normalize(inner).every(([lo, hi]) => normalize(outer).some(([from, to]) => lo >= from && hi <= to));

/** Whether `item` adds nothing beside a neighbouring S*: it may be empty and holds only S's characters, so S* item = S*. */
function absorbedBy(star: RegexNode | undefined, item: RegexNode): boolean {
  const set = star === undefined ? null : starSet(star);
  if (set === null || !nullable(item)) return false;
  const chars = alphabet(item);
  return chars !== null && within(chars, set);
}

/**
 * A sequence of the items, nested sequences flattened and every item a neighbouring S* absorbs
 * dropped: an unanchored `.*` is `[^]* .* [^]*`, which is every string, and writing it so (and
 * the derivatives of a key trie walked over it) would repeat three character loops at each step.
 */
export function sequence(items: readonly RegexNode[]): RegexNode {
  const out: RegexNode[] = [];
  for (const item of items.flatMap((i) => (i.t === 'seq' ? i.items : [i]))) {
    if (absorbedBy(out.at(-1), item)) continue;
    while (out.length > 0 && absorbedBy(item, out.at(-1)!)) out.pop();
    out.push(item);
  }
  return out.length === 1 ? out[0]! : { t: 'seq', items: out };
}

/** Whether the node holds a lookahead's language, which only an automaton writes (regex-derivative.ts). */
export function hasLookahead(node: RegexNode): boolean {
  switch (node.t) {
    case 'chars':
      return false;
    case 'seq':
      return node.items.some(hasLookahead);
    case 'alt':
      return node.options.some(hasLookahead);
    case 'repeat':
      return hasLookahead(node.node);
    case 'and':
    case 'not':
      return true;
  }
}

/** The length range (in characters) of a node's strings; max null: unbounded. */
export function lengthRange(node: RegexNode): { min: number; max: number | null } {
  switch (node.t) {
    case 'chars':
      return { min: 1, max: 1 };
    case 'seq':
      return node.items.map(lengthRange).reduce((a, b) => ({ min: a.min + b.min, max: a.max === null || b.max === null ? null : a.max + b.max }), { min: 0, max: 0 });
    case 'alt': {
      const ranges = node.options.map(lengthRange);
      return { min: Math.min(...ranges.map((r) => r.min)), max: ranges.some((r) => r.max === null) ? null : Math.max(...ranges.map((r) => r.max!)) };
    }
    case 'repeat': {
      const inner = lengthRange(node.node);
      return { min: inner.min * node.min, max: node.max === null || inner.max === null ? (inner.max === 0 ? 0 : null) : inner.max * node.max };
    }
    // Wider than exact, never narrower: the strings of an intersection are some of its first node's.
    case 'and':
      return lengthRange(node.nodes[0]!);
    case 'not':
      return { min: 0, max: null };
  }
}

/**
 * A whole-string language whose length alone picks out its strings among a looser one: every item
 * fixed in length but one repeat of a character set with an upper count (`[a-z0-9-]{1,255}`,
 * `v[0-9]{1,12}`). Returned: the language with that count open (`[a-z0-9-]+`) and the lengths
 * the original allows, which together say exactly what it says. Null for anything else.
 */
export function countLifted(node: RegexNode): { readonly node: RegexNode; readonly min: number; readonly max: number } | null {
  const items = flatItems(node);
  const variable = items.flatMap((item, i) => (lengthRange(item).min === lengthRange(item).max ? [] : [i]));
  if (variable.length !== 1) return null;
  const i = variable[0]!;
  const item = items[i]!;
  if (item.t !== 'repeat' || item.node.t !== 'chars' || item.max === null) return null;
  const fixed = items.reduce((sum, other, j) => (j === i ? sum : sum + lengthRange(other).min), 0);
  const copy = [...items];
  copy[i] = { t: 'repeat', node: item.node, min: item.min, max: null };
  return { node: { t: 'seq', items: copy }, min: fixed + item.min, max: fixed + item.max };
}

/**
 * The pattern as whole-string alternatives: the unanchored sides of each get any characters, so
 * each node's strings are exactly the strings the pattern's search finds a match in.
 */
export function patternLanguage(pattern: string): RegexNode {
  const options = parsePattern(pattern).map(({ node, anchoredStart, anchoredEnd }): RegexNode => {
    const items: RegexNode[] = [];
    if (!anchoredStart) items.push(ANY_REPEAT);
    items.push(node);
    if (!anchoredEnd) items.push(ANY_REPEAT);
    return sequence(items);
  });
  return options.length === 1 ? options[0]! : { t: 'alt', options };
}

/** Flattens nested sequences, so a length can be shared out over one sequence's items. */
function flatItems(node: RegexNode): RegexNode[] {
  return node.t === 'seq' ? node.items.flatMap(flatItems) : [node];
}

/**
 * The node restricted to strings of minLength..maxLength characters, when that can be written
 * exactly: the node's own lengths already lie inside, or it is a sequence of fixed-length items
 * and one repeated single character (the length then bounds that repetition). Null otherwise.
 */
export function withLength(node: RegexNode, minLength: number, maxLength: number | null): RegexNode | null {
  const own = lengthRange(node);
  if (own.min >= minLength && maxLength !== null && own.max !== null && own.max <= maxLength) return node;
  if (own.min >= minLength && maxLength === null) return node;
  if (node.t === 'alt') {
    const options: RegexNode[] = [];
    for (const option of node.options) {
      const bounded = withLength(option, minLength, maxLength);
      if (bounded === null) return null;
      options.push(bounded);
    }
    return { t: 'alt', options };
  }
  const items = flatItems(node);
  const variable = items.map((item, i) => ({ item, i, range: lengthRange(item) })).filter(({ range }) => range.max !== range.min);
  if (variable.length > 1) return null;
  const fixed = items.reduce((sum, item) => sum + lengthRange(item).min, 0) - (variable[0]?.range.min ?? 0);
  if (variable.length === 0) return fixed >= minLength && (maxLength === null || fixed <= maxLength) ? node : { t: 'alt', options: [] };
  const { item, i } = variable[0]!;
  if (item.t !== 'repeat' || item.node.t !== 'chars') return null;
  const min = Math.max(item.min, minLength - fixed);
  const max = maxLength === null ? item.max : item.max === null ? maxLength - fixed : Math.min(item.max, maxLength - fixed);
  if (max !== null && max < min) return { t: 'alt', options: [] };
  const copy = [...items];
  copy[i] = { t: 'repeat', node: item.node, min, max };
  return { t: 'seq', items: copy };
}
