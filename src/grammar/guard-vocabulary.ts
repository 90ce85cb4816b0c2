// What the tokens of one vocabulary do to the string guard's counts (string-guard.ts), computed
// once per vocabulary: how many characters each adds inside a string, which hold a quote or a
// backslash (followed byte by byte), which close a string after how many characters, and which
// hold `}` or `,` (followed where an object in any key order is open). Pure.

import { maskWords } from '../contracts/token-mask.js';

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;

/** What the tokens of one vocabulary do to a count, computed once per vocabulary. */
export class GuardVocabulary {
  /** Tokens with a quote or a backslash: followed byte by byte. */
  readonly special: readonly number[];
  private readonly specialIds: ReadonlySet<number>;
  /**
   * For each special token, inside a string: the characters before its first quote, or -1 where a
   * backslash comes first or a second quote follows (a string opened again): those are followed
   * byte by byte; the rest only close the string after that many characters.
   */
  private readonly closesAfter: Int32Array;
  /** For each special token: whether `}` or `,` follows its first quote (it may close or extend an object in any order). */
  private readonly structuralTail: Uint8Array;
  /** The most characters a token without either adds. */
  readonly widest: number;
  /** Tokens without a quote or backslash that hold `}` or `,`: followed outside strings where an object in any order is open. */
  readonly structural: readonly number[];
  /** Those that also hold `{`. */
  readonly emptyObjects: readonly number[];
  /** fits[n], n < widest: the tokens without a quote or backslash that add at most n characters, and every other token. */
  private readonly fits: Int32Array[];

  constructor(
    readonly bytes: readonly (Uint8Array | undefined)[],
    vocabSize: number,
  ) {
    const chars = new Uint16Array(vocabSize);
    const special: number[] = [];
    const closes: number[] = [];
    let widest = 0;
    const structural: number[] = [];
    const tails: number[] = [];
    for (let id = 0; id < vocabSize; id++) {
      const token = bytes[id];
      if (token === undefined) continue;
      let count = 0;
      let before = -1;
      let quotes = 0;
      let plain = true;
      for (const byte of token) {
        if (byte === BACKSLASH && plain) before = -1;
        if (byte === QUOTE && plain) before = count;
        if (byte === QUOTE) quotes++;
        if (byte === QUOTE || byte === BACKSLASH) plain = false;
        if ((byte & 0xc0) !== 0x80 && plain) count++;
      }
      chars[id] = Math.min(count, 0xffff);
      if (plain && (token.includes(0x7d) || token.includes(0x2c))) structural.push(id);
      if (plain) widest = Math.max(widest, count);
      else {
        special.push(id);
        closes.push(quotes === 1 && !token.includes(BACKSLASH) ? before : -1);
        const tail = token.subarray(token.indexOf(QUOTE) + 1);
        tails.push(tail.includes(0x7d) || tail.includes(0x2c) ? 1 : 0);
      }
    }
    this.special = special;
    this.structural = structural;
    this.emptyObjects = structural.filter((id) => bytes[id]!.includes(0x7b));
    this.specialIds = new Set(special);
    this.closesAfter = Int32Array.from(closes);
    this.structuralTail = Uint8Array.from(tails);
    this.widest = widest;
    // From the widest down: each mask is the one above less the plain tokens one character too many for it.
    const byChars: number[][] = Array.from({ length: widest + 1 }, () => []);
    for (let id = 0; id < vocabSize; id++) if (bytes[id] !== undefined && !this.specialIds.has(id)) byChars[chars[id]!]!.push(id);
    this.fits = new Array(widest);
    let mask = new Int32Array(maskWords(vocabSize)).fill(-1);
    for (let room = widest - 1; room >= 0; room--) {
      mask = mask.slice();
      for (const id of byChars[room + 1]!) mask[id >>> 5] = mask[id >>> 5]! & ~(1 << (id & 31));
      this.fits[room] = mask;
    }
  }

  /** The mask of tokens allowed with `room` characters left (room < widest). */
  fitting(room: number): Int32Array {
    return this.fits[room]!;
  }

  /**
   * The i-th special token's characters before the quote that closes a string, or -1 (see
   * closesAfter); -1 too where objects in any order are open and `}` or `,` follows the quote.
   */
  closingAt(index: number, keysOpen: boolean): number {
    return keysOpen && this.structuralTail[index] === 1 ? -1 : this.closesAfter[index]!;
  }

  /** The tokens that spell the first 1, 2, … bytes of `text` (built on first use: only keys beside patternProperties ask). */
  tokensSpelling(text: Uint8Array): number[] {
    if (this.byText === undefined) {
      this.byText = new Map();
      for (const [id, token] of this.bytes.entries()) if (token !== undefined) this.byText.set(latin1(token), id);
    }
    const out: number[] = [];
    for (let end = 1; end <= text.length; end++) {
      const id = this.byText.get(latin1(text.subarray(0, end)));
      if (id !== undefined) out.push(id);
    }
    return out;
  }
  private byText: Map<string, number> | undefined;

  /** Whether a token holds a quote or backslash (followed byte by byte). */
  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }
}

/** Bytes as a string of the same length, one character a byte (a map key). */
const latin1 = (bytes: Uint8Array): string => String.fromCharCode(...bytes);
