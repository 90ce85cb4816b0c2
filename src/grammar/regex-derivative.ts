// Brzozowski derivatives of a parsed pattern (regex-grammar.ts's RegexNode): what is left of its
// language after a given first character, and the part of it that starts with a character
// outside a set. Together they write "the pattern's strings except these few" exactly — the keys
// patternProperties or propertyNames allow besides the named properties — without building an
// automaton: a trie of the names is walked, each step taking the derivative. Pure.

import type { RegexNode } from './regex-grammar.js';

type Ranges = readonly (readonly [number, number])[];

/** The language with no string. */
export const NOTHING: RegexNode = { t: 'alt', options: [] };
/** The language of the empty string alone. */
export const EMPTY_STRING: RegexNode = { t: 'seq', items: [] };

const isNothing = (node: RegexNode): boolean => node.t === 'alt' && node.options.length === 0;

function seq(items: readonly RegexNode[]): RegexNode {
  const flat: RegexNode[] = [];
  for (const item of items) {
    if (isNothing(item)) return NOTHING;
    if (item.t === 'seq') flat.push(...item.items);
    else flat.push(item);
  }
  return flat.length === 1 ? flat[0]! : { t: 'seq', items: flat };
}

/** A union with nested unions flattened and repeated options dropped (derivatives of `.*x.*` would otherwise grow at every step). */
function alt(options: readonly RegexNode[]): RegexNode {
  const seen = new Map<string, RegexNode>();
  const add = (node: RegexNode): void => {
    if (node.t === 'alt') node.options.forEach(add);
    else seen.set(JSON.stringify(node), node);
  };
  options.forEach(add);
  const kept = [...seen.values()];
  return kept.length === 1 ? kept[0]! : { t: 'alt', options: kept };
}

const inRanges = (set: Ranges, code: number): boolean => set.some(([lo, hi]) => code >= lo && code <= hi);

function withoutRanges(set: Ranges, excluded: Ranges): Ranges {
  let out: [number, number][] = set.map(([lo, hi]) => [lo, hi]);
  for (const [xlo, xhi] of excluded) {
    out = out.flatMap(([lo, hi]): [number, number][] => {
      if (xhi < lo || xlo > hi) return [[lo, hi]];
      const parts: [number, number][] = [];
      if (lo < xlo) parts.push([lo, xlo - 1]);
      if (hi > xhi) parts.push([xhi + 1, hi]);
      return parts;
    });
  }
  return out;
}

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
  }
}

/** The rest of each string whose first repetition is under way: the node's count lowered by one. */
function remainingRepeats(node: Extract<RegexNode, { t: 'repeat' }>): RegexNode {
  const max = node.max === null ? null : node.max - 1;
  if (max === 0) return EMPTY_STRING;
  // A repetition that may be empty can make up its minimum with empty rounds.
  const min = nullable(node.node) ? 0 : Math.max(node.min - 1, 0);
  return { t: 'repeat', node: node.node, min, max };
}

/** The strings s such that (the character) + s is in the node's language. */
export function derivative(node: RegexNode, code: number): RegexNode {
  switch (node.t) {
    case 'chars':
      return inRanges(node.set, code) ? EMPTY_STRING : NOTHING;
    case 'seq': {
      if (node.items.length === 0) return NOTHING;
      const [first, ...rest] = node.items as [RegexNode, ...RegexNode[]];
      const through = seq([derivative(first, code), ...rest]);
      return nullable(first) ? alt([through, derivative(seq(rest), code)]) : through;
    }
    case 'alt':
      return alt(node.options.map((option) => derivative(option, code)));
    case 'repeat':
      if (node.max === 0) return NOTHING;
      return seq([derivative(node.node, code), remainingRepeats(node)]);
  }
}

/** The node's non-empty strings whose first character is outside `excluded`. */
export function startingOutside(node: RegexNode, excluded: Ranges): RegexNode {
  switch (node.t) {
    case 'chars': {
      const set = withoutRanges(node.set, excluded);
      return set.length === 0 ? NOTHING : { t: 'chars', set };
    }
    case 'seq': {
      if (node.items.length === 0) return NOTHING;
      const [first, ...rest] = node.items as [RegexNode, ...RegexNode[]];
      const through = seq([startingOutside(first, excluded), ...rest]);
      return nullable(first) ? alt([through, startingOutside(seq(rest), excluded)]) : through;
    }
    case 'alt':
      return alt(node.options.map((option) => startingOutside(option, excluded)));
    case 'repeat':
      if (node.max === 0) return NOTHING;
      return seq([startingOutside(node.node, excluded), remainingRepeats(node)]);
  }
}

/** Whether the node's language is empty. */
export function matchesNothing(node: RegexNode): boolean {
  switch (node.t) {
    case 'chars':
      return node.set.length === 0;
    case 'seq':
      return node.items.some(matchesNothing);
    case 'alt':
      return node.options.every(matchesNothing);
    case 'repeat':
      return node.min > 0 && matchesNothing(node.node);
  }
}
