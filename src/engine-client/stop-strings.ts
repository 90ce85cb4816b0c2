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
//
// Each stop string is followed by a Knuth–Morris–Pratt state (how much of it the text ends
// with), so a delta costs O(its length × the number of stop strings), whatever their sizes: a
// client's 32 one-megabyte stop strings cost the serving thread no more per token than 32 short
// ones. The KMP border table of a stop string is built lazily, as far as the text has matched it,
// so nothing is computed over a long stop string's tail the text never reaches.

export interface StopStringResult {
  /** Text that may be emitted now (the stop string itself only with include_stop_str_in_output). */
  readonly text: string;
  /** The stop string that matched in this delta; null while generation continues. */
  readonly stopped: string | null;
}

const CONTINUE_EMPTY: StopStringResult = { text: '', stopped: null };

/** One stop string's KMP matcher: `matched` is the longest prefix of it that the text ends with. */
class StopState {
  matched = 0;
  /** border[k]: the longest proper border of the stop's first k + 1 characters, for k < computed. */
  private border = new Int32Array(0);
  private computed = 0;

  constructor(readonly stop: string) {}

  /** Advances by one character (a UTF-16 code unit); true when the whole stop string now ends the text. */
  feed(c: number): boolean {
    const stop = this.stop;
    let q = this.matched;
    while (q > 0 && stop.charCodeAt(q) !== c) q = this.borderOf(q);
    if (stop.charCodeAt(q) === c) q++;
    this.matched = q;
    return q === stop.length;
  }

  /** The longest proper border of the stop's first q characters (q ≥ 1). */
  private borderOf(q: number): number {
    while (this.computed < q) this.extend();
    return this.border[q - 1]!;
  }

  // The standard prefix-function step for index `computed`, from the entries before it.
  private extend(): void {
    const stop = this.stop;
    const i = this.computed;
    if (i >= this.border.length) {
      const grown = new Int32Array(Math.min(stop.length, Math.max(16, this.border.length * 2)));
      grown.set(this.border);
      this.border = grown;
    }
    let k = i === 0 ? 0 : this.border[i - 1]!;
    if (i > 0) {
      while (k > 0 && stop.charCodeAt(i) !== stop.charCodeAt(k)) k = this.border[k - 1]!;
      if (stop.charCodeAt(i) === stop.charCodeAt(k)) k++;
    }
    this.border[i] = k;
    this.computed = i + 1;
  }
}

/** Text held back, as the pieces it arrived in: releasing from the front never copies what stays. */
class HeldText {
  private pieces: string[] = [];
  private head = 0;
  length = 0;

  push(piece: string): void {
    if (piece.length === 0) return;
    this.pieces.push(piece);
    this.length += piece.length;
  }

  /** Removes and returns the first `n` characters. */
  takeFront(n: number): string {
    let out = '';
    this.length -= n;
    while (n > 0) {
      const piece = this.pieces[this.head]!;
      if (piece.length <= n) {
        out += piece;
        n -= piece.length;
        this.head++;
      } else {
        out += piece.slice(0, n);
        this.pieces[this.head] = piece.slice(n);
        n = 0;
      }
    }
    if (this.head > 64 && this.head * 2 > this.pieces.length) {
      this.pieces = this.pieces.slice(this.head);
      this.head = 0;
    }
    return out;
  }

  clear(): void {
    this.pieces = [];
    this.head = 0;
    this.length = 0;
  }
}

export class StopStringMatcher {
  private readonly states: readonly StopState[];
  /** Not-yet-emitted text as the deltas it came in (exclusive mode only: inclusive mode emits every delta at once). */
  private readonly held = new HeldText();
  private done = false;

  constructor(
    stops: readonly string[],
    private readonly includeStopStrInOutput = false,
  ) {
    this.states = stops.filter((s) => s.length > 0).map((s) => new StopState(s));
  }

  /** True once a stop string matched: later deltas are ignored. */
  get stopped(): boolean {
    return this.done;
  }

  /** Feeds the next text delta; returns what can be released now and whether a stop string matched. */
  push(delta: string): StopStringResult {
    if (this.done) return CONTINUE_EMPTY;
    if (this.states.length === 0) return delta.length === 0 ? CONTINUE_EMPTY : { text: delta, stopped: null };
    const match = this.feed(delta);
    if (this.includeStopStrInOutput) {
      if (match) this.done = true;
      const text = match ? delta.slice(0, match.end) : delta;
      return text.length === 0 && !match ? CONTINUE_EMPTY : { text, stopped: match?.stop ?? null };
    }
    const held = this.held;
    held.push(delta);
    if (match) {
      this.done = true;
      // `match.end` counts from the delta's start; the stop string's start lies in the held text or the delta.
      const text = held.takeFront(held.length - delta.length + match.end - match.stop.length);
      held.clear();
      return { text, stopped: match.stop };
    }
    // Held: the longest suffix that is still a prefix of some stop string.
    let hold = 0;
    for (const state of this.states) hold = Math.max(hold, state.matched);
    const text = held.takeFront(held.length - hold);
    return text.length === 0 ? CONTINUE_EMPTY : { text, stopped: null };
  }

  /** The request finished for another reason (EOS, length, abort): release whatever is held. */
  flush(): string {
    const text = this.done || this.includeStopStrInOutput ? '' : this.held.takeFront(this.held.length);
    this.held.clear();
    return text;
  }

  /** Runs the delta through every stop's state; the first stop to complete (ties: the longer), its end in the delta. */
  private feed(delta: string): { stop: string; end: number } | null {
    for (let i = 0; i < delta.length; i++) {
      const c = delta.charCodeAt(i);
      let best: StopState | null = null;
      for (const state of this.states) {
        if (state.feed(c) && (best === null || state.stop.length > best.stop.length)) best = state;
      }
      if (best) return { stop: best.stop, end: i + 1 };
    }
    return null;
  }
}
