// The keys a closed object's patternProperties allow, as the string guard needs them for an object
// written in any key order (any-order.ts): a key begun must still be able to end as a key not yet
// written. The grammar spells the patterns' keys less the named ones; the guard, which remembers
// the keys written, asks how many keys of the language a key's text so far can still become — all
// of a pattern like `^x-` or `^[a-z]+$` (infinitely many: any key begun in it can end unwritten),
// or a few (`^[1-5][0-9]{2}$`: 500, of which some may be written already). Pure.

import { MAX_AUTOMATON_STATES } from '../pattern-automaton.js';
import { type AutomatonState, intersection, matchesNothing } from '../regex-derivative.js';
import { PatternUnsupported, parsePattern, type RegexNode } from '../regex-grammar.js';
import { hasLookahead, patternLanguage } from '../regex-language.js';

/** A key's JSON text between its quotes, as bytes. */
type RawText = readonly number[] | Uint8Array;

/** A key's text that no key of the language begins with. */
export const NO_STATE = -1;

export class KeyLanguage {
  /** Per state, how many strings of the language go on from it (Infinity past a loop). */
  private readonly left: Float64Array;

  /** Per state, whether every state reachable from it (itself too) begins infinitely many keys: from there no key text can run out of keys. */
  private readonly endlessFrom: Uint8Array;

  private constructor(
    private readonly states: readonly AutomatonState[],
    /** Where a pattern matches anywhere in a key (matchesAnywhere): the patterns, tested as they are, and no automaton. */
    private readonly anywhere: readonly RegExp[] | null = null,
  ) {
    this.left = new Float64Array(states.length).fill(-1);
    for (let id = 0; id < states.length; id++) this.countFrom(id, new Set());
    // Unsettled: the states that can reach one with finitely many keys (backwards from those).
    const into: number[][] = states.map(() => []);
    for (const [id, state] of states.entries()) for (const edge of state.edges) into[edge.to]!.push(id);
    const pending = states.flatMap((_, id) => (this.left[id] === Number.POSITIVE_INFINITY ? [] : [id]));
    const unsettled = new Set(pending);
    while (pending.length > 0)
      for (const from of into[pending.pop()!]!)
        if (!unsettled.has(from)) {
          unsettled.add(from);
          pending.push(from);
        }
    this.endlessFrom = Uint8Array.from(states, (_, id) => (unsettled.has(id) ? 0 : 1));
  }

  /** The keys matching any of the patterns, or null where one cannot be read or the automaton would be too large. */
  static of(patterns: readonly string[]): KeyLanguage | null {
    const key = patterns.join('\u0000');
    if (cache.has(key)) return cache.get(key)!;
    let language: KeyLanguage | null = null;
    try {
      if (patterns.some(matchesAnywhere))
        language = new KeyLanguage(
          [],
          patterns.map((pattern) => new RegExp(pattern, 'u')),
        );
    } catch (error) {
      if (!(error instanceof PatternUnsupported || error instanceof SyntaxError)) throw error;
    }
    if (language !== null) return remember(key, language);
    try {
      const nodes = patterns.map(patternLanguage);
      const states = intersection([nodes.length === 1 ? nodes[0]! : ({ t: 'alt', options: nodes } satisfies RegexNode)], MAX_AUTOMATON_STATES);
      if (states !== null && states.length > 0) language = new KeyLanguage(states);
    } catch (error) {
      if (!(error instanceof PatternUnsupported)) throw error;
    }
    return remember(key, language);
  }

  /** The state after a key's raw JSON text (between the quotes), up to its last whole character; NO_STATE where no key begins so. */
  stateAfter(raw: RawText): number {
    if (this.anywhere !== null) return 0;
    // Asked for each byte of each token the guard follows inside a key: the texts seen are kept (a few keys' worth).
    const key = String.fromCharCode(...raw);
    const known = this.seenTexts.get(key);
    if (known !== undefined) return known;
    let state = 0;
    for (const ch of wholeCharacters(raw)) {
      state = this.next(state, ch.codePointAt(0)!);
      if (state === NO_STATE) break;
    }
    if (this.seenTexts.size > 4096) this.seenTexts.clear();
    this.seenTexts.set(key, state);
    return state;
  }
  private readonly seenTexts = new Map<string, number>();

  /** Whether a key (decoded) is in the language. */
  matches(key: string): boolean {
    if (this.anywhere !== null) return this.anywhere.some((pattern) => pattern.test(key));
    let state = 0;
    for (const ch of key) {
      state = this.next(state, ch.codePointAt(0)!);
      if (state === NO_STATE) return false;
    }
    return this.states[state]!.accepting;
  }

  /** How many keys of the language begin where `state` stands (0 at NO_STATE, Infinity where a loop lies ahead). */
  keysLeft(state: number): number {
    if (this.anywhere !== null) return Number.POSITIVE_INFINITY;
    return state === NO_STATE ? 0 : this.left[state]!;
  }

  /** Whether from `state` on every key text begins infinitely many keys (so only its written and named ones can never strand it). */
  endless(state: number): boolean {
    return this.anywhere !== null || (state !== NO_STATE && this.endlessFrom[state] === 1);
  }

  private next(state: number, code: number): number {
    for (const edge of this.states[state]!.edges) for (const [lo, hi] of edge.set) if (code >= lo && code <= hi) return edge.to;
    return NO_STATE;
  }

  /** Every state is kept only where a string ends from it, so a loop reachable from a state makes its count infinite. */
  private countFrom(id: number, onPath: Set<number>): number {
    if (this.left[id]! >= 0) return this.left[id]!;
    if (onPath.has(id)) return Number.POSITIVE_INFINITY;
    onPath.add(id);
    const state = this.states[id]!;
    let total = state.accepting ? 1 : 0;
    for (const edge of state.edges) {
      const width = edge.set.reduce((sum, [lo, hi]) => sum + hi - lo + 1, 0);
      total += width * this.countFrom(edge.to, onPath);
    }
    onPath.delete(id);
    this.left[id] = total;
    return total;
  }
}

const cache = new Map<string, KeyLanguage | null>();

function remember(key: string, language: KeyLanguage | null): KeyLanguage | null {
  if (cache.size > 256) cache.clear();
  cache.set(key, language);
  return language;
}

/**
 * Whether a pattern matches somewhere inside a key (a top-level alternative without `^` that
 * some string meets): then every key text goes on into infinitely many keys (append a match), so
 * the guard needs no automaton — which for a long unanchored alternation (`Red|Blue|…|Ultra
 * Moon`, every state a set of partial matches) took seconds to find too large.
 */
function matchesAnywhere(pattern: string): boolean {
  return parsePattern(pattern).some(({ node, anchoredStart }) => !anchoredStart && !hasLookahead(node) && !matchesNothing(node));
}

/**
 * The whole characters of a key's raw JSON text (an unfinished escape or UTF-8 sequence at its end
 * left out), decoded; empty where even those are not JSON (a bad escape).
 */
export function wholeCharacters(raw: RawText): string {
  let end = 0;
  while (end < raw.length) {
    const byte = raw[end]!;
    const length = byte === 0x5c ? (raw[end + 1] === 0x75 ? 6 : 2) : byte < 0x80 ? 1 : byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
    if (end + length > raw.length) break;
    end += length;
  }
  return decodedText(raw.slice(0, end)) ?? '';
}

/**
 * A string's raw JSON text (between its quotes: a key's, or a string item's) as the string it
 * spells; null where JSON does not read it (an escape cut off or unknown, a raw control
 * character). Bytes that are not UTF-8 read as U+FFFD, as TextDecoder reads them.
 */
export function decodedText(raw: RawText): string | null {
  try {
    return JSON.parse(`"${decoder.decode(Uint8Array.from(raw))}"`) as string;
  } catch {
    return null;
  }
}
const decoder = new TextDecoder();
