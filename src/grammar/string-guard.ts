// The string guard: string lengths and string items that must differ, over a vocabulary, as a mask
// beside the grammar's. The strings and arrays a GuardPlan (json-schema/guard-plan.ts) names are
// written plainly in the grammar, and this guard follows the output's JSON — which key or item
// each value is, where each string starts and ends — counting the characters of each bounded
// string and comparing each item of such an array, as it closes, with the ones before it. A token
// is allowed when it keeps every string it writes within its bound (and its pattern still able to
// end there: pattern-automaton.ts), closes none before its minimum, and repeats no item. In an
// object written in any key order (json-schema/any-order.ts) it also keeps the keys written and
// which of the place's object schemas are still alive: no key twice, `}` once an alive one has its
// required keys, a closed object's key text the start of a key not yet written.
//
// Characters are counted as JSON Schema counts them, code points of the decoded string: one per
// UTF-8 lead byte, one per escape (an escaped surrogate pair counts two, as the counted grammar
// counts it: stricter, never looser). Tokens without a quote or backslash only add characters
// inside a string, so near a bound one precomputed mask per remaining count removes those that
// add too many; the few tokens with a quote or backslash are followed byte by byte
// (guard-vocabulary.ts). The JSON nesting it follows, and the keys of objects in any order, are
// guard-frames.ts. Pure.

import type { GuardPlan } from './json-schema/guard-places.js';
import type { LengthBounds } from './json-schema/string-bounds.js';
import { discriminates, type Frame, framesAfterString, framesAfterStructure, keyCanGoOn, keyTokensToFollow, valuePlace } from './guard-frames.js';
import { openerStep } from './guard-opener.js';
import { BACKSLASH, type GuardVocabulary, QUOTE } from './guard-vocabulary.js';
import type { PatternAutomaton } from './pattern-automaton.js';

/** TEXT: free text before a call's opener (GuardPlan.opener), where no JSON is followed; the grammar lets a call start only after the whole opener, at the plan's root. */
const Mode = { OUTSIDE: 0, KEY: 1, VALUE_STRING: 2, TEXT: 3 } as const;

/** What a JSON escape's letter stands for (`u` aside). */
const ESCAPED: Readonly<Record<number, number>> = { 34: 0x22, 92: 0x5c, 47: 0x2f, 98: 0x08, 102: 0x0c, 110: 0x0a, 114: 0x0d, 116: 0x09 };
const hexValue = (byte: number): number => (byte <= 0x39 ? byte - 0x30 : (byte | 0x20) - 0x57);

/** A value string being read: its bounds (null: unbounded), characters so far, and where its pattern's automaton stands. */
interface StringState {
  readonly bounds: LengthBounds | null;
  readonly count: number;
  /** The automaton's state after the characters read (bounds.automaton), or UNKNOWN_STATE. */
  readonly state: number;
  /** Continuation bytes still due for the character being read, and its code point so far. */
  readonly pending: number;
  readonly code: number;
}

/** Where the output stands, immutable: each accepted token makes a new one (the matcher keeps them for rollback). */
export class GuardCursor {
  private constructor(
    private readonly frames: readonly Frame[],
    private readonly mode: number,
    /** In a string: 0, or 1 after a backslash, or 2..5 with that many less 2 hex digits of \u read (their value in `hex`). */
    private readonly escape: number,
    private readonly hex: number,
    private readonly string: StringState | null,
    /** In a key: its raw bytes so far (only at places whose keys matter). */
    /** In a key at a place whose keys matter, or an item of an array whose items must differ: its raw bytes so far. */
    private readonly textBytes: readonly number[] | null,
    /** In free text: the bytes of the opener matched so far (guard-opener.ts). */
    private readonly opened = 0,
  ) {}

  /** Before the output's first byte: at the document's start, or in free text where the plan has an opener. */
  static start(plan: GuardPlan | null): GuardCursor {
    return new GuardCursor([], plan?.opener === undefined ? Mode.OUTSIDE : Mode.TEXT, 0, 0, null, null);
  }

  /** The cursor after `bytes`, or null when they break a bound (or leave fewer characters than the pattern still needs). */
  advance(plan: GuardPlan, bytes: Uint8Array): GuardCursor | null {
    let frames = this.frames;
    let mode = this.mode;
    let escape = this.escape;
    let hex = this.hex;
    let textBytes = this.textBytes === null ? null : [...this.textBytes];
    let bounds = this.string?.bounds ?? null;
    let count = this.string?.count ?? 0;
    let state = this.string?.state ?? 0;
    let pending = this.string?.pending ?? 0;
    let code = this.string?.code ?? 0;
    let opened = this.opened;
    for (const byte of bytes) {
      if (mode === Mode.TEXT) {
        opened = openerStep(plan.opener!, opened, byte);
        if (opened === plan.opener!.bytes.length) [mode, opened] = [Mode.OUTSIDE, 0];
        continue;
      }
      if (mode === Mode.OUTSIDE) {
        const frame = frames.at(-1);
        if (byte === QUOTE) {
          escape = 0;
          if (frame !== undefined && !frame.array && frame.expectKey) {
            mode = Mode.KEY;
            textBytes = frame.place === 0 ? null : [];
          } else {
            mode = Mode.VALUE_STRING;
            textBytes = (frame?.array && frame.unique) || (frame !== undefined && discriminates(plan, frame)) ? [] : null;
            bounds = plan.places[valuePlace(plan, frames)]!.string;
            [count, state, pending] = [0, 0, 0];
            // A pattern with no match within the bounds: no string here can be finished.
            if (bounds?.automaton && !bounds.automaton.canFinish(0, 0, bounds.min, bounds.max)) return null;
          }
        } else {
          const after = framesAfterStructure(plan, frames, byte);
          if (after === null) return null;
          // A call closed: free text again until the next opener.
          if (plan.opener !== undefined && after.length === 0 && frames.length > 0) mode = Mode.TEXT;
          frames = after;
        }
        continue;
      }
      // In a string (key or value). A character starts at a lead byte or a backslash (an escape is
      // one character: an escaped surrogate pair counts two); it is complete (`unit`, for the
      // pattern's automaton) after its last continuation byte, escape letter or hex digit.
      let starts = false;
      let unit = -1;
      if (escape === 1) {
        escape = byte === 0x75 ? 2 : 0;
        hex = 0;
        if (escape === 0) unit = ESCAPED[byte] ?? -1;
      } else if (escape >= 2) {
        hex = hex * 16 + hexValue(byte);
        escape = escape === 5 ? 0 : escape + 1;
        if (escape === 0) unit = hex;
      } else if (byte === BACKSLASH) {
        escape = 1;
        starts = true;
      } else if (byte === QUOTE) {
        if (mode === Mode.VALUE_STRING && bounds !== null && count < bounds.min) return null;
        const after = framesAfterString(plan, frames, mode === Mode.KEY, textBytes);
        if (after === null) return null;
        frames = after;
        textBytes = null;
        mode = Mode.OUTSIDE;
        bounds = null;
        continue;
      } else if (byte < 0x80) {
        starts = true;
        unit = byte;
      } else if ((byte & 0xc0) !== 0x80) {
        starts = true;
        pending = byte >= 0xf0 ? 3 : byte >= 0xe0 ? 2 : 1;
        code = byte & (byte >= 0xf0 ? 0x07 : byte >= 0xe0 ? 0x0f : 0x1f);
      } else {
        code = (code << 6) | (byte & 0x3f);
        if (--pending === 0) unit = code;
      }
      textBytes?.push(byte);
      if (mode === Mode.KEY && textBytes !== null && !keyCanGoOn(plan, frames.at(-1)!, textBytes)) return null;
      if (bounds === null) continue;
      if (starts && bounds.max !== null && ++count > bounds.max) return null;
      if (starts && bounds.max === null) count++;
      if (unit >= 0 && bounds.automaton !== null) {
        state = bounds.automaton.next(state, unit);
        if (!bounds.automaton.canFinish(state, count, bounds.min, bounds.max)) return null;
      }
    }
    const string = mode === Mode.VALUE_STRING ? { bounds, count, state, pending, code } : null;
    return new GuardCursor(frames, mode, escape, hex, string, textBytes, opened);
  }

  /**
   * Where an object in any order is open: outside strings, the tokens that close it or begin
   * another member (`}` and `,`: every required key written, a key left to write); inside a key,
   * the tokens that could leave it unable to end unwritten (keyTokensToFollow).
   */
  private restrictKeys(plan: GuardPlan, vocabulary: GuardVocabulary, mask: Int32Array): void {
    if (plan.objectKeys.size === 0) return;
    // Outside any such object, only a token that opens one and closes it (`{}`) can break its rule.
    const open = this.frames.some((frame) => frame.used !== null);
    if (!open && this.mode !== Mode.OUTSIDE) return;
    const follow = (id: number): void => {
      const bytes = vocabulary.bytes[id];
      if (bytes !== undefined && this.advance(plan, bytes) === null) clear(mask, id);
    };
    if (this.mode === Mode.OUTSIDE) {
      for (const id of open ? vocabulary.structural : vocabulary.emptyObjects) if ((mask[id >>> 5]! & (1 << (id & 31))) !== 0) follow(id);
    } else if (this.mode === Mode.KEY) {
      const toFollow = keyTokensToFollow(plan, this.frames.at(-1)!, this.textBytes ?? []);
      if (toFollow === 'all')
        forEachSet(mask, (id) => {
          if (!vocabulary.isSpecial(id)) follow(id);
        });
      else if (toFollow !== 'none')
        for (const rest of toFollow) for (const id of vocabulary.tokensSpelling(rest)) if ((mask[id >>> 5]! & (1 << (id & 31))) !== 0 && !vocabulary.isSpecial(id)) follow(id);
    }
  }

  /**
   * In free text: only a token that completes the opener and goes on into the call can break a
   * bound, and only one with a quote or backslash (it enters a string) — those are followed.
   */
  private restrictText(plan: GuardPlan, vocabulary: GuardVocabulary, mask: Int32Array): Int32Array {
    const last = plan.opener!.bytes.at(-1)!;
    for (const id of vocabulary.special) {
      if ((mask[id >>> 5]! & (1 << (id & 31))) === 0) continue;
      const bytes = vocabulary.bytes[id]!;
      if (bytes.includes(last) && this.advance(plan, bytes) === null) clear(mask, id);
    }
    return mask;
  }

  /**
   * Whether a token without a quote or backslash keeps the current value string within its bound
   * and its pattern's reach: advance() for that case, without allocating (it runs once per allowed
   * token near a patterned string's bound).
   */
  private plainFits(bytes: Uint8Array, automaton: PatternAutomaton, min: number, max: number | null): boolean {
    let { count, state, pending, code } = this.string!;
    for (const byte of bytes) {
      let unit = -1;
      if (byte < 0x80) {
        count++;
        unit = byte;
      } else if ((byte & 0xc0) !== 0x80) {
        count++;
        pending = byte >= 0xf0 ? 3 : byte >= 0xe0 ? 2 : 1;
        code = byte & (byte >= 0xf0 ? 0x07 : byte >= 0xe0 ? 0x0f : 0x1f);
      } else {
        code = (code << 6) | (byte & 0x3f);
        if (--pending === 0) unit = code;
      }
      if (max !== null && count > max) return false;
      if (unit >= 0) state = automaton.next(state, unit);
    }
    // A character still pending is counted but not yet stepped: its state is known on the next token (a stranded end there is possible only at a multi-byte character).
    return automaton.canFinish(state, count, min, max);
  }

  /**
   * Clears, in place, the bits of `mask` (the grammar's allowed tokens) for tokens that would break
   * a bound from here.
   */
  restrict(plan: GuardPlan, vocabulary: GuardVocabulary, mask: Int32Array): Int32Array {
    if (this.mode === Mode.TEXT) return this.restrictText(plan, vocabulary, mask);
    this.restrictKeys(plan, vocabulary, mask);
    const string = this.mode === Mode.VALUE_STRING ? this.string : null;
    const bounds = string?.bounds ?? null;
    if (bounds !== null && this.escape !== 0) {
      // Inside an escape a plain token's hex digits count nothing and its later characters do: follow each allowed token.
      forEachSet(mask, (id) => {
        const bytes = vocabulary.bytes[id];
        if (bytes !== undefined && this.advance(plan, bytes) === null) clear(mask, id);
      });
      return mask;
    }
    if (string !== null && bounds !== null) {
      const room = bounds.max === null ? Number.POSITIVE_INFINITY : bounds.max - string.count;
      const automaton = bounds.automaton;
      // Near the bound of a patterned string, or below its minimum where the pattern's lengths have gaps: each allowed
      // token, for the lengths the pattern can still end at after it.
      // Tokens too long for the room go first; where the pattern's lengths have no gaps, one that leaves at least its
      // longest need (maxDist) is sure to fit, so only the ones in between are followed.
      if (room < vocabulary.widest) and(mask, vocabulary.fitting(room));
      const gapsMatter = automaton?.gapped === true && string.count < bounds.min;
      if (automaton !== null && (room < vocabulary.widest + automaton.maxDist || gapsMatter)) {
        const sure = gapsMatter ? -1 : room - automaton.maxDist;
        const sureFit = sure < 0 ? null : sure < vocabulary.widest ? vocabulary.fitting(sure) : undefined;
        if (sureFit !== undefined)
          // The fitting masks hold every special token, so these are the plain tokens not sure to fit.
          forEachSet(sureFit === null ? mask : mask.map((word, w) => word & ~sureFit[w]!), (id) => {
            const bytes = vocabulary.bytes[id];
            if (bytes !== undefined && !vocabulary.isSpecial(id) && !this.plainFits(bytes, automaton, bounds.min, bounds.max)) clear(mask, id);
          });
      }
    }
    // A closing token's count settles it, unless the string is an item that must differ from items already closed.
    // An item compared with earlier ones, or a value whose constants tell object schemas apart: its closing token is followed.
    const top = this.frames.at(-1);
    const comparing = string !== null && this.textBytes !== null && (top?.array !== true || top.seen.length > 0);
    const inString = string !== null && this.escape === 0 && !comparing;
    const keysOpen = this.frames.some((frame) => frame.used !== null);
    for (const [index, id] of vocabulary.special.entries()) {
      if ((mask[id >>> 5]! & (1 << (id & 31))) === 0) continue;
      const closing = inString ? vocabulary.closingAt(index, keysOpen) : -1;
      if (closing >= 0) {
        // It closes this string after `closing` characters and opens no other: only this string's bounds can refuse it.
        const count = string!.count + closing;
        if (bounds !== null && (count < bounds.min || (bounds.max !== null && count > bounds.max))) clear(mask, id);
      } else if (this.advance(plan, vocabulary.bytes[id]!) === null) clear(mask, id);
    }
    return mask;
  }
}

const and = (mask: Int32Array, other: Int32Array): void => {
  for (let w = 0; w < mask.length; w++) mask[w] = mask[w]! & other[w]!;
};

const clear = (mask: Int32Array, id: number): void => {
  mask[id >>> 5] = mask[id >>> 5]! & ~(1 << (id & 31));
};

function forEachSet(mask: Int32Array, visit: (id: number) => void): void {
  for (let w = 0; w < mask.length; w++) {
    let word = mask[w]!;
    while (word !== 0) {
      const bit = 31 - Math.clz32(word & -word);
      visit(w * 32 + bit);
      word &= word - 1;
    }
  }
}
