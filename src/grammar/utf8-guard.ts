// UTF-8 well-formedness over a vocabulary, as a mask beside the grammar's. xgrammar matches a
// byte-level vocabulary byte by byte and does not hold those bytes to UTF-8: it accepts overlong
// forms (F0 82 80 80), surrogates (ED A0 80), code points past U+10FFFF and, in some character
// classes, a lone lead byte before the closing quote — so a constrained output could end a
// string inside a character and decode to U+FFFD. This guard tracks where the output stands in
// the current character (one of eight states, RFC 3629's table) and allows only tokens whose
// bytes continue it well; tokens that add no bytes (stop tokens, specials) only on a complete
// character. Each state's allowed tokens are one bitmask, computed once per vocabulary, so a
// step costs one AND over the mask's words. Pure.

import { maskWords } from '../contracts/token-mask.js';

/**
 * Where the output stands in its current character. COMPLETE: at a character boundary. NEED_1..3:
 * that many continuation bytes (80–BF) to go. The four after lead bytes whose second byte is
 * narrower: E0 (A0–BF: no overlong), ED (80–9F: no surrogate), F0 (90–BF: no overlong), F4
 * (80–8F: nothing past U+10FFFF); each then needs one (E0, ED) or two (F0, F4) more.
 */
export const Utf8State = { COMPLETE: 0, NEED_1: 1, NEED_2: 2, NEED_3: 3, AFTER_E0: 4, AFTER_ED: 5, AFTER_F0: 6, AFTER_F4: 7 } as const;
export type Utf8State = (typeof Utf8State)[keyof typeof Utf8State];
const STATES = 8;
/** No well-formed text continues this way. */
export const UTF8_INVALID = -1;

/** The state after one more byte, or UTF8_INVALID. */
export function utf8Step(state: number, byte: number): number {
  const cont = byte >= 0x80 && byte <= 0xbf;
  switch (state) {
    case Utf8State.COMPLETE:
      if (byte <= 0x7f) return Utf8State.COMPLETE;
      if (byte >= 0xc2 && byte <= 0xdf) return Utf8State.NEED_1;
      if (byte === 0xe0) return Utf8State.AFTER_E0;
      if (byte === 0xed) return Utf8State.AFTER_ED;
      if (byte >= 0xe1 && byte <= 0xef) return Utf8State.NEED_2;
      if (byte === 0xf0) return Utf8State.AFTER_F0;
      if (byte >= 0xf1 && byte <= 0xf3) return Utf8State.NEED_3;
      if (byte === 0xf4) return Utf8State.AFTER_F4;
      return UTF8_INVALID;
    case Utf8State.NEED_1:
      return cont ? Utf8State.COMPLETE : UTF8_INVALID;
    case Utf8State.NEED_2:
      return cont ? Utf8State.NEED_1 : UTF8_INVALID;
    case Utf8State.NEED_3:
      return cont ? Utf8State.NEED_2 : UTF8_INVALID;
    case Utf8State.AFTER_E0:
      return byte >= 0xa0 && byte <= 0xbf ? Utf8State.NEED_1 : UTF8_INVALID;
    case Utf8State.AFTER_ED:
      return byte >= 0x80 && byte <= 0x9f ? Utf8State.NEED_1 : UTF8_INVALID;
    case Utf8State.AFTER_F0:
      return byte >= 0x90 && byte <= 0xbf ? Utf8State.NEED_2 : UTF8_INVALID;
    case Utf8State.AFTER_F4:
      return byte >= 0x80 && byte <= 0x8f ? Utf8State.NEED_2 : UTF8_INVALID;
    default:
      return UTF8_INVALID;
  }
}

/** The state after a run of bytes, or UTF8_INVALID. */
export function utf8Walk(state: number, bytes: Uint8Array): number {
  let s = state;
  for (let i = 0; i < bytes.length && s !== UTF8_INVALID; i++) s = utf8Step(s, bytes[i]!);
  return s;
}

export class Utf8Guard {
  private constructor(
    /** next[token * 8 + state]: the state after the token, or UTF8_INVALID. */
    private readonly next: Int8Array,
    /** One mask per state: the tokens allowed there. */
    private readonly masks: readonly Int32Array[],
  ) {}

  /**
   * The guard for a vocabulary given as each token's bytes (index = id) over a logits row of
   * `vocabSize`; ids past the list (padding) add no bytes, like special tokens.
   */
  static build(tokenBytes: readonly Uint8Array[], vocabSize: number): Utf8Guard {
    const size = Math.max(vocabSize, tokenBytes.length);
    const next = new Int8Array(size * STATES);
    const masks = Array.from({ length: STATES }, () => new Int32Array(maskWords(size)));
    for (let id = 0; id < size; id++) {
      const bytes = tokenBytes[id];
      for (let state = 0; state < STATES; state++) {
        // No bytes: allowed only at a character boundary, where it changes nothing.
        const after = bytes === undefined || bytes.length === 0 ? (state === Utf8State.COMPLETE ? state : UTF8_INVALID) : utf8Walk(state, bytes);
        next[id * STATES + state] = after;
        if (after !== UTF8_INVALID) {
          const mask = masks[state]!;
          mask[id >>> 5] = mask[id >>> 5]! | (1 << (id & 31));
        }
      }
    }
    return new Utf8Guard(next, masks);
  }

  /** The state after `token` from `state`, or UTF8_INVALID when it would break UTF-8. */
  after(state: number, token: number): number {
    if (token < 0 || token * STATES >= this.next.length) return UTF8_INVALID;
    return this.next[token * STATES + state]!;
  }

  /** Clears, in place, the bits of `mask` for tokens not allowed in `state`. */
  restrict(mask: Int32Array, state: number): Int32Array {
    const allowed = this.masks[state]!;
    const words = Math.min(mask.length, allowed.length);
    for (let w = 0; w < words; w++) mask[w] = mask[w]! & allowed[w]!;
    return mask;
  }
}
