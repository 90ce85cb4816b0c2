// String lengths over a vocabulary, as a mask beside the grammar's: the strings a LengthPlan
// (json-schema/length-sites.ts) bounds are written as any string in the grammar, and this guard
// follows the output's JSON — which key or item each value is, where each string starts and ends
// — counting the characters of each bounded string. A token is allowed when it keeps every string
// it writes within its bound and closes none before its minimum.
//
// Characters are counted as JSON Schema counts them, code points of the decoded string: one per
// UTF-8 lead byte, one per escape (an escaped surrogate pair counts two, as the counted grammar
// counts it: stricter, never looser). Tokens without a quote or backslash only add characters
// inside a string, so near a bound one precomputed mask per remaining count removes those that
// add too many; the few tokens with a quote or backslash are followed byte by byte. Pure.

import { maskWords } from '../contracts/token-mask.js';
import { type LengthPlan, ROOT } from './json-schema/length-sites.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** What the tokens of one vocabulary do to a count, computed once per vocabulary. */
export class LengthVocabulary {
  /** Characters (UTF-8 lead bytes) each token adds inside a string. */
  private readonly chars: Uint16Array;
  /** Tokens with a quote or a backslash: followed byte by byte. */
  readonly special: readonly number[];
  /** The most characters a token without either adds. */
  readonly widest: number;
  /** fits[n]: the tokens without a quote or backslash that add at most n characters, and every other token. */
  private readonly fits: (Int32Array | undefined)[] = [];

  constructor(
    readonly bytes: readonly (Uint8Array | undefined)[],
    private readonly vocabSize: number,
  ) {
    this.chars = new Uint16Array(vocabSize);
    const special: number[] = [];
    let widest = 0;
    for (let id = 0; id < vocabSize; id++) {
      const token = bytes[id];
      if (token === undefined) continue;
      let chars = 0;
      let plain = true;
      for (const byte of token) {
        if (byte === QUOTE || byte === BACKSLASH) plain = false;
        if ((byte & 0xc0) !== 0x80) chars++;
      }
      this.chars[id] = Math.min(chars, 0xffff);
      if (plain) widest = Math.max(widest, chars);
      else special.push(id);
    }
    this.special = special;
    this.widest = widest;
  }

  /** The mask of tokens allowed with `room` characters left (room < widest). */
  fitting(room: number): Int32Array {
    let mask = this.fits[room];
    if (mask) return mask;
    mask = new Int32Array(maskWords(this.vocabSize)).fill(-1);
    for (let id = 0; id < this.vocabSize; id++) {
      const token = this.bytes[id];
      if (token !== undefined && this.chars[id]! > room && !this.isSpecial(token)) mask[id >>> 5] = mask[id >>> 5]! & ~(1 << (id & 31));
    }
    this.fits[room] = mask;
    return mask;
  }

  private isSpecial(token: Uint8Array): boolean {
    return token.includes(QUOTE) || token.includes(BACKSLASH);
  }
}

/** An open array or object: its place in the plan, and the item index or the key being read. */
interface Frame {
  readonly place: number;
  readonly array: boolean;
  readonly index: number;
  /** The current key (decoded); null before it is read. */
  readonly key: string | null;
  /** True between `{` or `,` and a key's closing quote. */
  readonly expectKey: boolean;
}

const Mode = { OUTSIDE: 0, KEY: 1, VALUE_STRING: 2 } as const;

/** Where the output stands, immutable: each accepted token makes a new one (the matcher keeps them for rollback). */
export class LengthCursor {
  private constructor(
    private readonly frames: readonly Frame[],
    private readonly mode: number,
    /** In a string: 0, or 1 after a backslash, or 2..5 with that many less 2 hex digits of \u read. */
    private readonly escape: number,
    /** In a value string: the characters so far. */
    private readonly count: number,
    /** In a value string: its bounds (max -1 for none), or null when unbounded. */
    private readonly min: number,
    private readonly max: number,
    private readonly bounded: boolean,
    /** In a key: its raw bytes so far (only at places whose keys matter). */
    private readonly keyBytes: readonly number[] | null,
  ) {}

  static start(): LengthCursor {
    return new LengthCursor([], Mode.OUTSIDE, 0, 0, 0, -1, false, null);
  }

  /** The cursor after `bytes`, or null when they break a bound. */
  advance(plan: LengthPlan, bytes: Uint8Array): LengthCursor | null {
    let frames = this.frames;
    let mode = this.mode;
    let escape = this.escape;
    let count = this.count;
    let min = this.min;
    let max = this.max;
    let bounded = this.bounded;
    let keyBytes = this.keyBytes === null ? null : [...this.keyBytes];
    const top = (): Frame | undefined => frames[frames.length - 1];
    const replaceTop = (frame: Frame): void => {
      frames = [...frames.slice(0, -1), frame];
    };
    const valuePlace = (): number => {
      const frame = top();
      if (frame === undefined) return ROOT;
      const place = plan.places[frame.place]!;
      if (frame.array) return place.items[frame.index] ?? place.restItems;
      return (frame.key !== null ? place.keys.get(frame.key) : undefined) ?? place.otherKeys;
    };
    for (const byte of bytes) {
      if (mode === Mode.OUTSIDE) {
        const frame = top();
        if (byte === QUOTE) {
          escape = 0;
          if (frame !== undefined && !frame.array && frame.expectKey) {
            mode = Mode.KEY;
            keyBytes = frame.place === 0 ? null : [];
          } else {
            const bounds = plan.places[valuePlace()]!.string;
            mode = Mode.VALUE_STRING;
            count = 0;
            bounded = bounds !== null;
            min = bounds?.min ?? 0;
            max = bounds?.max ?? -1;
          }
        } else if (byte === 0x7b || byte === 0x5b) {
          frames = [...frames, { place: valuePlace(), array: byte === 0x5b, index: 0, key: null, expectKey: byte === 0x7b }];
        } else if (byte === 0x7d || byte === 0x5d) {
          frames = frames.slice(0, -1);
        } else if (byte === 0x2c && frame !== undefined) {
          replaceTop(frame.array ? { ...frame, index: frame.index + 1 } : { ...frame, key: null, expectKey: true });
        }
        continue;
      }
      // In a string (key or value). A character starts at a lead byte or a backslash (an escape is
      // one character); its escape letter, hex digits and continuation bytes add none.
      let starts = false;
      if (escape === 1) escape = byte === 0x75 ? 2 : 0;
      else if (escape >= 2) escape = escape === 5 ? 0 : escape + 1;
      else if (byte === BACKSLASH) {
        escape = 1;
        starts = true;
      } else if (byte === QUOTE) {
        if (mode === Mode.KEY) {
          const frame = top()!;
          replaceTop({ ...frame, key: keyBytes === null ? null : decodeKey(keyBytes), expectKey: false });
          keyBytes = null;
        } else if (bounded && count < min) return null;
        mode = Mode.OUTSIDE;
        continue;
      } else starts = (byte & 0xc0) !== 0x80;
      if (mode === Mode.KEY) keyBytes?.push(byte);
      else if (starts && bounded && ++count > max && max >= 0) return null;
    }
    return new LengthCursor(frames, mode, escape, count, min, max, bounded, keyBytes);
  }

  /**
   * Clears, in place, the bits of `mask` (the grammar's allowed tokens) for tokens that would break
   * a bound from here.
   */
  restrict(plan: LengthPlan, vocabulary: LengthVocabulary, mask: Int32Array): Int32Array {
    const inBoundedString = this.mode === Mode.VALUE_STRING && this.bounded;
    if (inBoundedString && this.escape !== 0) {
      // Inside an escape a plain token's hex digits count nothing and its later characters do: follow each allowed token.
      forEachSet(mask, (id) => {
        const bytes = vocabulary.bytes[id];
        if (bytes !== undefined && this.advance(plan, bytes) === null) clear(mask, id);
      });
      return mask;
    }
    if (inBoundedString && this.max >= 0) {
      const room = this.max - this.count;
      if (room < vocabulary.widest) {
        const fitting = vocabulary.fitting(room);
        for (let w = 0; w < mask.length; w++) mask[w] = mask[w]! & fitting[w]!;
      }
    }
    for (const id of vocabulary.special) {
      if ((mask[id >>> 5]! & (1 << (id & 31))) === 0) continue;
      if (this.advance(plan, vocabulary.bytes[id]!) === null) clear(mask, id);
    }
    return mask;
  }
}

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
