// A string pattern (and format) as a small automaton the string guard can step through, so that a
// length-bounded string beside a pattern can also be left to the guard: the grammar enforces the
// pattern, the guard the length, and the automaton tells the guard which lengths the pattern can
// still end at from where the string stands — a token after which none lies within the bounds
// would strand the output, so it is masked too.
//
// For each state the lengths still possible are a finite set below a threshold T and, for the
// states that stay in the sets' fixed point, every length from T on (reach(r), the states a match
// of exactly r more characters ends from, settles once reach(r + 1) = reach(r): `[a-z0-9-]+`,
// `\S+(\s+\S+)*` and `[0-9]{9}` settle; `(ab)+` alternates forever and keeps the counted grammar). Pure.

import { type AutomatonState, intersection } from './regex-derivative.js';
import { PatternUnsupported, type RegexNode } from './regex-grammar.js';
import { patternLanguage } from './regex-language.js';

/** The most states an automaton may have (beside the most a pattern's intersection with a format may: string-schema.ts). */
export const MAX_AUTOMATON_STATES = 1024;
/** State after a character no edge takes (an escape the grammar allows and the automaton does not model): the guard stops looking ahead. */
export const UNKNOWN_STATE = -1;

/** The most lengths (states times the threshold) an automaton may list before its sets settle. */
export const MAX_LISTED_LENGTHS = 1 << 20;

export class PatternAutomaton {
  /** The fewest characters from each state to a match. */
  readonly dist: Int32Array;
  readonly maxDist: number;
  /** Whether some state's lengths have a gap past its fewest (then a minimum can strand a string, not only a maximum). */
  readonly gapped: boolean;

  private constructor(
    private readonly states: readonly AutomatonState[],
    /** Per state, the lengths below `threshold` a match can end at, ascending. */
    private readonly lengths: readonly (readonly number[])[],
    /** Per state, whether every length from `threshold` on can end a match. */
    private readonly tail: readonly boolean[],
    private readonly threshold: number,
  ) {
    this.dist = Int32Array.from(states, (_, id) => lengths[id]![0] ?? threshold);
    this.maxDist = this.dist.reduce((a, b) => Math.max(a, b), 0);
    // Every length from the fewest on: the list runs without a gap up to the threshold, and the tail goes on from there.
    const unbroken = (id: number): boolean => tail[id]! && lengths[id]!.length === threshold - this.dist[id]!;
    this.gapped = states.some((_, id) => !unbroken(id));
  }

  /** The automaton of strings matching every pattern, or null (unparsable, past MAX_AUTOMATON_STATES, or lengths that never settle). */
  static of(patterns: readonly string[]): PatternAutomaton | null {
    const key = patterns.join('\u0000');
    if (cache.has(key)) return cache.get(key)!;
    const automaton = PatternAutomaton.build(patterns);
    if (cache.size > 256) cache.clear();
    cache.set(key, automaton);
    return automaton;
  }

  private static build(patterns: readonly string[]): PatternAutomaton | null {
    let languages: RegexNode[];
    try {
      languages = patterns.map(patternLanguage);
    } catch (error) {
      if (error instanceof PatternUnsupported) return null;
      throw error;
    }
    const states = intersection(languages, MAX_AUTOMATON_STATES);
    if (states === null || states.length === 0) return null;
    const lengths: number[][] = states.map(() => []);
    let reach = new Set<number>(states.flatMap((state, id) => (state.accepting ? [id] : [])));
    for (let r = 0; ; r++) {
      if (r * states.length > MAX_LISTED_LENGTHS) return null;
      const next = new Set<number>();
      for (const [id, state] of states.entries()) if (state.edges.some((edge) => reach.has(edge.to))) next.add(id);
      if (next.size === reach.size && [...next].every((id) => reach.has(id))) {
        // Settled: reach(r) = reach(r + 1) = ... from here on.
        return new PatternAutomaton(
          states,
          lengths,
          states.map((_, id) => reach.has(id)),
          r,
        );
      }
      for (const id of reach) lengths[id]!.push(r);
      reach = next;
    }
  }

  /** The state after one character (a code point, or an escaped UTF-16 unit), or UNKNOWN_STATE. */
  next(state: number, code: number): number {
    if (state === UNKNOWN_STATE) return UNKNOWN_STATE;
    for (const edge of this.states[state]!.edges) for (const [lo, hi] of edge.set) if (code >= lo && code <= hi) return edge.to;
    return UNKNOWN_STATE;
  }

  /** Whether a string at `state` with `count` characters can still end at a length in min..max (max null: none); true where the state is unknown. */
  canFinish(state: number, count: number, min: number, max: number | null): boolean {
    if (state === UNKNOWN_STATE) return true;
    const lo = Math.max(0, min - count);
    const hi = max === null ? Number.POSITIVE_INFINITY : max - count;
    if (hi < lo) return false;
    if (this.tail[state] && Math.max(lo, this.threshold) <= hi) return true;
    const list = this.lengths[state]!;
    // The first listed length at or past lo.
    let a = 0;
    let b = list.length;
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (list[mid]! < lo) a = mid + 1;
      else b = mid;
    }
    return a < list.length && list[a]! <= hi;
  }
}

const cache = new Map<string, PatternAutomaton | null>();
