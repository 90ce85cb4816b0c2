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
// (guard-vocabulary.ts). Pure.

import type { ObjectKeyRule } from './json-schema/any-order.js';
import { type GuardPlan, ROOT } from './json-schema/guard-plan.js';
import type { LengthBounds } from './json-schema/string-bounds.js';
import { BACKSLASH, type GuardVocabulary, QUOTE } from './guard-vocabulary.js';
import type { PatternAutomaton } from './pattern-automaton.js';

/** An open array or object: its place in the plan, and the item index or the key being read. */
interface Frame {
  readonly place: number;
  readonly array: boolean;
  /** An array whose string items must differ, and the ones closed so far. */
  readonly unique: boolean;
  readonly seen: readonly string[];
  readonly index: number;
  /** The current key (decoded); null before it is read. */
  readonly key: string | null;
  /** True between `{` or `,` and a key's closing quote. */
  readonly expectKey: boolean;
  /** An object written in any key order (its rules: keyRules): the keys written so far; null elsewhere. */
  readonly used: readonly string[] | null;
  /** Which of those rules (one per object schema at its place, as bits) the keys and values so far still meet. */
  readonly alive: number;
}

const Mode = { OUTSIDE: 0, KEY: 1, VALUE_STRING: 2 } as const;

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
  ) {}

  static start(): GuardCursor {
    return new GuardCursor([], Mode.OUTSIDE, 0, 0, null, null);
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
    for (const byte of bytes) {
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
            count = 0;
            state = 0;
            pending = 0;
            // A pattern with no match within the bounds: no string here can be finished.
            if (bounds?.automaton && !bounds.automaton.canFinish(0, 0, bounds.min, bounds.max)) return null;
          }
        } else {
          const after = framesAfterStructure(plan, frames, byte);
          if (after === null) return null;
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
    return new GuardCursor(frames, mode, escape, hex, string, textBytes);
  }

  /**
   * Where an object in any order is open: outside strings, the tokens that close it or begin
   * another member (`}` and `,`: every required key written, a key left to write); inside a key of
   * a closed one, every token (its text must begin a key not yet written).
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
    } else if (this.mode === Mode.KEY && this.frames.at(-1)!.used !== null && !someAlive(plan, this.frames.at(-1)!, (rule) => !rule.closed)) {
      forEachSet(mask, (id) => {
        if (!vocabulary.isSpecial(id)) follow(id);
      });
    }
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

/**
 * The frames after a byte outside strings: `{` / `[` open a frame, `}` / `]` close one (an object
 * in any order only once an alive rule's required keys are written), `,` moves to the next item or
 * key (in an object in any order only while a key is left to write); null where it breaks a rule.
 */
function framesAfterStructure(plan: GuardPlan, frames: readonly Frame[], byte: number): readonly Frame[] | null {
  const frame = frames.at(-1);
  if (byte === 0x7b || byte === 0x5b) {
    const place = valuePlace(plan, frames);
    const array = byte === 0x5b;
    const rules = array ? null : keyRules(plan, place);
    const used = rules === null ? null : [];
    const alive = rules === null ? 0 : (1 << rules.length) - 1;
    return [...frames, { place, array, unique: array && plan.places[place]!.unique, seen: [], index: 0, key: null, expectKey: !array, used, alive }];
  }
  if (byte === 0x7d || byte === 0x5d) {
    if (frame?.used && !someAlive(plan, frame, (rule) => rule.required.every((key) => frame.used!.includes(key)))) return null;
    return frames.slice(0, -1);
  }
  if (byte !== 0x2c || frame === undefined) return frames;
  if (frame.used && !someAlive(plan, frame, (rule) => !rule.closed || rule.names.some((name) => !frame.used!.includes(name)))) return null;
  return [...frames.slice(0, -1), frame.array ? { ...frame, index: frame.index + 1 } : { ...frame, key: null, expectKey: true }];
}

/**
 * The frames after a string closes: a key read into its object's frame; an item of an array whose
 * items must differ added to the ones seen, or null where it repeats one.
 */
function framesAfterString(plan: GuardPlan, frames: readonly Frame[], isKey: boolean, text: readonly number[] | null): readonly Frame[] | null {
  const frame = frames.at(-1);
  if (frame === undefined || (!isKey && text === null)) return frames;
  const decoded = text === null ? null : decodeKey(text);
  if (isKey && frame.used !== null) {
    // An object in any order: no key twice, and only keys some object schema still alive allows.
    if (decoded === null || frame.used.includes(decoded)) return null;
    const alive = aliveWhere(plan, frame, (rule) => !rule.closed || rule.names.includes(decoded));
    if (alive === 0) return null;
    return [...frames.slice(0, -1), { ...frame, key: decoded, expectKey: false, used: [...frame.used, decoded], alive }];
  }
  if (!frame.array && frame.used !== null) {
    // A value that tells object schemas apart: those whose constants for the key exclude it are no longer alive.
    const key = frame.key!;
    const alive = aliveWhere(plan, frame, (rule) => decoded !== null && (rule.constants.get(key)?.includes(decoded) ?? true));
    return alive === 0 ? null : [...frames.slice(0, -1), { ...frame, alive }];
  }
  if (isKey) return [...frames.slice(0, -1), { ...frame, key: decoded, expectKey: false }];
  if (decoded === null || frame.seen.includes(decoded)) return null;
  return [...frames.slice(0, -1), { ...frame, seen: [...frame.seen, decoded] }];
}

/**
 * The keys rules of the objects in any order at a place (one per object schema there), as the
 * translation wrote them; null where the grammar keeps the schema's order there (no such object,
 * or one the translation wrote merged with others, in order). Memoized per plan: asked at every
 * structural byte and key byte, and complete once the translation that filled objectKeys is done.
 */
function keyRules(plan: GuardPlan, place: number): readonly ObjectKeyRule[] | null {
  let byPlace = keyRulesMemo.get(plan);
  if (byPlace === undefined) keyRulesMemo.set(plan, (byPlace = new Map()));
  let rules = byPlace.get(place);
  if (rules === undefined) {
    const found = plan.places[place]!.objectNodes.map((node) => plan.objectKeys.get(node));
    rules = found.length > 0 && found.every((rule) => rule !== undefined) ? (found as ObjectKeyRule[]) : null;
    byPlace.set(place, rules);
  }
  return rules;
}
const keyRulesMemo = new WeakMap<GuardPlan, Map<number, readonly ObjectKeyRule[] | null>>();

/** The frame's alive rules that meet `test`, as bits. */
function aliveWhere(plan: GuardPlan, frame: Frame, test: (rule: ObjectKeyRule) => boolean): number {
  let alive = 0;
  const rules = keyRules(plan, frame.place)!;
  for (const [i, rule] of rules.entries()) if (frame.alive & (1 << i) && test(rule)) alive |= 1 << i;
  return alive;
}

const someAlive = (plan: GuardPlan, frame: Frame, test: (rule: ObjectKeyRule) => boolean): boolean => aliveWhere(plan, frame, test) !== 0;

/** Whether the value about to start in an object in any order is one whose string constants tell its object schemas apart. */
function discriminates(plan: GuardPlan, frame: Frame): boolean {
  return !frame.array && frame.used !== null && frame.key !== null && someAlive(plan, frame, (rule) => rule.constants.has(frame.key!));
}

/** Whether a key begun in an object in any order can still end: unless a schema still alive allows other keys, its text so far begins a named key not yet written. */
function keyCanGoOn(plan: GuardPlan, frame: Frame, text: readonly number[]): boolean {
  if (frame.used === null) return true;
  return someAlive(
    plan,
    frame,
    (rule) => !rule.closed || rule.rawNames.some((raw, i) => raw.length >= text.length && text.every((byte, j) => raw[j] === byte) && !frame.used!.includes(rule.names[i]!)),
  );
}

/** The place of the value that starts next: the document, the current item, or the current key's value. */
function valuePlace(plan: GuardPlan, frames: readonly Frame[]): number {
  const frame = frames.at(-1);
  if (frame === undefined) return ROOT;
  const place = plan.places[frame.place]!;
  if (frame.array) return place.items[frame.index] ?? place.restItems;
  if (frame.key === null) return place.otherKeys;
  const named = place.keys.get(frame.key);
  if (named !== undefined) return named;
  if (place.patternKeys === undefined) return place.otherKeys;
  const { tests, places } = place.patternKeys;
  let bits = 0;
  for (const [i, test] of tests.entries()) if (test.test(frame.key)) bits |= 1 << i;
  return places[bits]!;
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

const decoder = new TextDecoder();

/** A key's raw JSON text (between its quotes) as the string it spells. */
function decodeKey(raw: readonly number[]): string | null {
  try {
    return JSON.parse(`"${decoder.decode(Uint8Array.from(raw))}"`) as string;
  } catch {
    return null;
  }
}
