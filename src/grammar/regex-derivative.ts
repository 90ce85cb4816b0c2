// Brzozowski derivatives of a parsed pattern (regex-grammar.ts's RegexNode, a lookahead's
// intersections and complements included): what is left of its language after a given first
// character, and the part of it that starts with a character outside a set. Together they write
// "the pattern's strings except these few" exactly — the keys patternProperties or propertyNames
// allow besides the named properties — without building an automaton: a trie of the names is
// walked, each step taking the derivative. Where an automaton is needed (an intersection of
// languages, exactly one of several, a lookahead), its states are tuples of derivatives. Pure.

import { checkDeadline } from './translation-deadline.js';
import type { RegexNode } from './regex-grammar.js';
import { nullable, sequence } from './regex-language.js';

type Ranges = readonly (readonly [number, number])[];

/** The language with no string. */
export const NOTHING: RegexNode = { t: 'alt', options: [] };
/** The language of the empty string alone. */
export const EMPTY_STRING: RegexNode = { t: 'seq', items: [] };
/** Every string. */
const ANY_STRING: RegexNode = { t: 'repeat', node: { t: 'chars', set: [[0, 0x10ffff]] }, min: 0, max: null };

const isNothing = (node: RegexNode): boolean => node.t === 'alt' && node.options.length === 0;

function seq(items: readonly RegexNode[]): RegexNode {
  return items.some(isNothing) ? NOTHING : sequence(items);
}

// Structural identity: equal nodes get one number, computed from their children's numbers (cached
// per object), so comparing derivatives costs no walk of the trees they share. The table is
// emptied when large (a long-lived worker); numbers are never reused, so a node numbered before
// only stops being recognized as equal to one numbered after (a duplicate kept, never one lost).
const structureIds = new WeakMap<RegexNode, number>();
const idsByStructure = new Map<string, number>();
const MAX_REMEMBERED_STRUCTURES = 262_144;
let nextStructureId = 0;

function structureId(node: RegexNode): number {
  const known = structureIds.get(node);
  if (known !== undefined) return known;
  const key =
    node.t === 'chars'
      ? `c${node.set.map(([lo, hi]) => `${lo}-${hi}`).join(',')}`
      : node.t === 'seq'
        ? `s${node.items.map(structureId).join(',')}`
        : node.t === 'alt'
          ? `a${node.options.map(structureId).join(',')}`
          : node.t === 'and'
            ? `i${node.nodes.map(structureId).join(',')}`
            : node.t === 'not'
              ? `n${structureId(node.node)}`
              : `r${structureId(node.node)},${node.min},${node.max}`;
  let id = idsByStructure.get(key);
  if (id === undefined) {
    if (idsByStructure.size >= MAX_REMEMBERED_STRUCTURES) idsByStructure.clear();
    id = nextStructureId++;
    idsByStructure.set(key, id);
  }
  structureIds.set(node, id);
  return id;
}

/** The nodes with nested ones of the same kind (`inner`) flattened and repeated ones dropped, keyed by their structure. */
function distinct(nodes: readonly RegexNode[], inner: (node: RegexNode) => readonly RegexNode[] | null): Map<number, RegexNode> {
  const seen = new Map<number, RegexNode>();
  const add = (node: RegexNode): void => {
    const nested = inner(node);
    if (nested !== null) nested.forEach(add);
    else seen.set(structureId(node), node);
  };
  nodes.forEach(add);
  return seen;
}

/** A union with nested unions flattened and repeated options dropped (derivatives of `.*x.*` would otherwise grow at every step). */
function alt(options: readonly RegexNode[]): RegexNode {
  const kept = [...distinct(options, (node) => (node.t === 'alt' ? node.options : null)).values()];
  return kept.length === 1 ? kept[0]! : { t: 'alt', options: kept };
}

/**
 * An intersection with nested ones flattened, repeated nodes dropped and the order fixed (so the
 * derivatives of a lookahead stay finitely many); one that holds a language with no string is none.
 */
function and(nodes: readonly RegexNode[]): RegexNode {
  const seen = distinct(nodes, (node) => (node.t === 'and' ? node.nodes : null));
  if ([...seen.values()].some(isNothing)) return NOTHING;
  const kept = [...seen].sort(([a], [b]) => a - b).map(([, node]) => node);
  return kept.length === 1 ? kept[0]! : { t: 'and', nodes: kept };
}

const not = (node: RegexNode): RegexNode => (node.t === 'not' ? node.node : { t: 'not', node });

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
    case 'and':
      return and(node.nodes.map((n) => derivative(n, code)));
    case 'not':
      return not(derivative(node.node, code));
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
    case 'and':
      return and(node.nodes.map((n) => startingOutside(n, excluded)));
    case 'not':
      // The complement's non-empty strings that start outside `excluded`: those strings, less the node's.
      return and([not(node.node), startingOutside(ANY_STRING, excluded)]);
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
    // Sufficient, not necessary: an intersection or a complement may be empty all the same (the
    // automaton, which explores them, finds that out; elsewhere they are only ever kept, never written).
    case 'and':
      return node.nodes.some(matchesNothing);
    case 'not':
      return false;
  }
}

/** The character sets a node's strings can start with (their union is every first character). */
function firstSets(node: RegexNode): Ranges[] {
  switch (node.t) {
    case 'chars':
      return [node.set];
    case 'seq': {
      const sets: Ranges[] = [];
      for (const item of node.items) {
        sets.push(...firstSets(item));
        if (!nullable(item)) break;
      }
      return sets;
    }
    case 'alt':
      return node.options.flatMap(firstSets);
    case 'repeat':
      return node.max === 0 ? [] : firstSets(node.node);
    // The cuts must only be fine enough that each piece has one derivative.
    case 'and':
      return node.nodes.flatMap(firstSets);
    case 'not':
      return [...firstSets(node.node), [[0, 0x10ffff]]];
  }
}

/** One state of an automaton: whether a string may end there, and where each set of next characters leads. */
export interface AutomatonState {
  readonly accepting: boolean;
  readonly edges: readonly { readonly set: Ranges; readonly to: number }[];
}

/**
 * The strings every node matches, as an automaton whose states are the tuples of the nodes'
 * derivatives (Brzozowski), explored from the nodes themselves (state 0); states from which no
 * string ends are left out. Null when it would take more than `maxStates` states (or when no string
 * is in all of them: then state 0 is not there either, and the result has no states).
 */
export function intersection(nodes: readonly RegexNode[], maxStates: number): AutomatonState[] | null {
  return product(
    nodes,
    (tuple) => tuple.every((node) => node !== null),
    (tuple) => tuple.every((node) => node !== null && nullable(node)),
    maxStates,
  );
}

/**
 * The strings exactly one group matches, a group matching where all its nodes do (oneOf over
 * patterns, formats and lengths): the product of every group's nodes, a state kept while some group
 * can still match, accepting where exactly one group does. Null past `maxStates`.
 */
export function exactlyOne(groups: readonly (readonly RegexNode[])[], maxStates: number): AutomatonState[] | null {
  const owner = groups.flatMap((group, g) => group.map(() => g));
  const matching = (tuple: readonly (RegexNode | null)[], ends: boolean): Set<number> => {
    const out = new Set<number>(groups.keys());
    for (const [k, node] of tuple.entries()) if (node === null || (ends && !nullable(node))) out.delete(owner[k]!);
    return out;
  };
  return product(
    groups.flat(),
    (tuple) => matching(tuple, false).size > 0,
    (tuple) => matching(tuple, true).size === 1,
    maxStates,
  );
}

/**
 * The automaton of tuples of the nodes' derivatives (a node that cannot go on is null in its
 * tuple): a tuple is a state while `alive` holds, and accepting where `accepting` does; only states
 * from which an accepting one is reachable are kept, renumbered with state 0 first.
 */
function product(
  nodes: readonly RegexNode[],
  alive: (tuple: readonly (RegexNode | null)[]) => boolean,
  accepting: (tuple: readonly (RegexNode | null)[]) => boolean,
  maxStates: number,
): AutomatonState[] | null {
  const keys = new Map<string, number>();
  const tuples: (RegexNode | null)[][] = [];
  const edges: { set: [number, number][]; to: number }[][] = [];
  const stateOf = (tuple: (RegexNode | null)[]): number => {
    const key = tuple.map((node) => (node === null ? '-' : structureId(node))).join(' ');
    let id = keys.get(key);
    if (id === undefined) {
      id = tuples.length;
      keys.set(key, id);
      tuples.push(tuple);
    }
    return id;
  };
  // Each node's moves, once per distinct node: the alphabet cut where its first sets start or end,
  // each piece with the derivative it leads to (null: none). The product's pieces cut at every node's cuts.
  const movesByNode = new Map<number, { lo: number; hi: number; next: RegexNode | null }[]>();
  const DEAD = [{ lo: 0, hi: 0x10ffff, next: null }];
  const movesOf = (node: RegexNode | null): { lo: number; hi: number; next: RegexNode | null }[] => {
    if (node === null) return DEAD;
    const id = structureId(node);
    const known = movesByNode.get(id);
    if (known) return known;
    const cuts = new Set<number>([0, 0x110000]);
    for (const set of firstSets(node)) for (const [lo, hi] of set) cuts.add(lo).add(hi + 1);
    const sorted = [...cuts].sort((a, b) => a - b);
    const moves = sorted.slice(0, -1).map((lo, k) => {
      const next = derivative(node, lo);
      return { lo, hi: sorted[k + 1]! - 1, next: matchesNothing(next) ? null : next };
    });
    movesByNode.set(id, moves);
    return moves;
  };
  stateOf([...nodes]);
  for (let id = 0; id < tuples.length; id++) {
    if (tuples.length > maxStates) return null;
    checkDeadline();
    const all = tuples[id]!.map(movesOf);
    const cuts = new Set<number>();
    for (const moves of all) for (const { lo } of moves) cuts.add(lo);
    const sorted = [...cuts].sort((a, b) => a - b);
    const at = all.map(() => 0);
    const byTarget = new Map<number, [number, number][]>();
    for (let k = 0; k < sorted.length; k++) {
      const code = sorted[k]!;
      const next: (RegexNode | null)[] = [];
      for (const [n, moves] of all.entries()) {
        while (moves[at[n]!]!.hi < code) at[n]!++;
        next.push(moves[at[n]!]!.next);
      }
      if (!alive(next)) continue;
      const to = stateOf(next);
      byTarget.set(to, [...(byTarget.get(to) ?? []), [code, (sorted[k + 1] ?? 0x110000) - 1]]);
    }
    edges.push([...byTarget].map(([to, set]) => ({ set, to })));
  }
  // Live states: those from which some string ends.
  const live = new Set<number>(tuples.flatMap((tuple, id) => (accepting(tuple) ? [id] : [])));
  for (let grew = true; grew; ) {
    grew = false;
    for (const [id, out] of edges.entries())
      if (!live.has(id) && out.some((e) => live.has(e.to))) {
        live.add(id);
        grew = true;
      }
  }
  if (!live.has(0)) return [];
  // Renumber the live states, state 0 first.
  const order = [...live].sort((a, b) => a - b);
  const index = new Map(order.map((id, i) => [id, i]));
  return order.map((id) => ({ accepting: accepting(tuples[id]!), edges: edges[id]!.filter((e) => live.has(e.to)).map((e) => ({ set: e.set, to: index.get(e.to)! })) }));
}
