// Stop strings, matched on the detokenized text as it streams, across token boundaries.
//
// Text is held back only while it could still be the start of a stop string: after each delta,
// the longest suffix that is a proper prefix of some stop string stays pending and everything
// before it is released. Because no released text can begin a stop string, every match lies in
// the pending text plus the new delta.
//
// When several stop strings occur, the one that ends first wins (ties: the one starting first,
// i.e. the longer). That is what a character-by-character stream would have seen, so the result
// does not depend on how the text happened to be split into tokens or steps.

export interface StopStringResult {
  /** Text that may be emitted now (the stop string itself only with include_stop_str_in_output). */
  readonly text: string;
  /** The stop string that matched in this delta; null while generation continues. */
  readonly stopped: string | null;
}

const CONTINUE_EMPTY: StopStringResult = { text: '', stopped: null };

export class StopStringMatcher {
  private readonly stops: readonly string[];
  private readonly longest: number;
  /** Not-yet-emitted text (exclusive mode) or the last emitted characters (inclusive mode). */
  private carry = '';
  private done = false;

  constructor(
    stops: readonly string[],
    private readonly includeStopStrInOutput = false,
  ) {
    this.stops = stops.filter((s) => s.length > 0);
    this.longest = this.stops.reduce((m, s) => Math.max(m, s.length), 0);
  }

  /** True once a stop string matched: later deltas are ignored. */
  get stopped(): boolean {
    return this.done;
  }

  /** Feeds the next text delta; returns what can be released now and whether a stop string matched. */
  push(delta: string): StopStringResult {
    if (this.done) return CONTINUE_EMPTY;
    if (this.stops.length === 0) return delta.length === 0 ? CONTINUE_EMPTY : { text: delta, stopped: null };
    const window = this.carry + delta;
    // Inclusive mode has already emitted its carry; only matches reaching into the delta are new.
    const emittedBefore = this.includeStopStrInOutput ? this.carry.length : 0;
    const match = earliestMatch(window, this.stops, emittedBefore);
    if (match) {
      this.done = true;
      this.carry = '';
      const end = this.includeStopStrInOutput ? match.end : match.end - match.stop.length;
      return { text: window.slice(emittedBefore, end), stopped: match.stop };
    }
    if (this.includeStopStrInOutput) {
      // Nothing needs holding (the stop string would be emitted anyway); keep enough to match across deltas.
      this.carry = window.slice(Math.max(0, window.length - (this.longest - 1)));
      return delta.length === 0 ? CONTINUE_EMPTY : { text: delta, stopped: null };
    }
    const hold = longestPartialStop(window, this.stops);
    this.carry = window.slice(window.length - hold);
    const text = window.slice(0, window.length - hold);
    return text.length === 0 ? CONTINUE_EMPTY : { text, stopped: null };
  }

  /** The request finished for another reason (EOS, length, abort): release whatever is held. */
  flush(): string {
    const held = this.done || this.includeStopStrInOutput ? '' : this.carry;
    this.carry = '';
    return held;
  }
}

/** The occurrence ending first (ties: starting first) among matches ending after `minEnd`. */
function earliestMatch(text: string, stops: readonly string[], minEnd: number): { stop: string; end: number } | null {
  let best: { stop: string; end: number } | null = null;
  for (const stop of stops) {
    const from = Math.max(0, minEnd - stop.length + 1);
    const at = text.indexOf(stop, from);
    if (at < 0) continue;
    const end = at + stop.length;
    if (!best || end < best.end || (end === best.end && stop.length > best.stop.length)) best = { stop, end };
  }
  return best;
}

/** Length of the longest suffix of `text` that is a proper prefix of some stop string. */
function longestPartialStop(text: string, stops: readonly string[]): number {
  let best = 0;
  for (const stop of stops) {
    for (let len = Math.min(stop.length - 1, text.length); len > best; len--) {
      if (text.endsWith(stop.slice(0, len))) {
        best = len;
        break;
      }
    }
  }
  return best;
}
