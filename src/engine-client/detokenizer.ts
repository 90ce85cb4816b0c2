// Incremental detokenization that never emits a broken character.
//
// Byte-level BPE (Qwen, GPT-2, Llama 3) and byte-fallback tokenizers split one character across
// several tokens, so decoding a prefix of the ids can end in an incomplete UTF-8 sequence, which
// the tokenizer renders as U+FFFD. Each step decodes a short window of recent ids and releases
// only its stable prefix: everything before a trailing run of U+FFFD. The window starts a few
// tokens back (`prefixOffset`) so context-dependent decoders (a leading space dropped at the start
// of a text, WordPiece "##" joins) see the same neighbours they would in a full decode.
//
// Decoding is assumed prefix-stable: appending ids never changes text before an incomplete tail.
// That holds for byte-level and byte-fallback decoders, which is where splitting happens.

import type { TokenDecoder } from '../contracts/tokenizer.js';

export interface DetokenizerOptions {
  readonly skipSpecialTokens?: boolean;
  /**
   * The prompt's last few ids: decoding context only, never emitted. Lets the first output token
   * keep a leading space that a decoder would drop at the very start of a text.
   */
  readonly contextTokenIds?: readonly number[];
}

/** Prompt ids kept as context, as vLLM does (enough for any decoder's look-behind). */
export const CONTEXT_TOKENS = 5;
/**
 * An incomplete but valid UTF-8 tail is at most 3 bytes, which decoders render as one U+FFFD
 * (WHATWG replacement) or one per byte (byte-fallback): only the last 3 U+FFFD of a trailing run
 * can still turn into a character. Any before them are invalid bytes, final already.
 */
const MAX_PENDING_REPLACEMENTS = 3;
/** Past this many ids since the last stable point, look for a later one (see rebase). */
const REBASE_AFTER = 6;
/** A window this long without any stable point is pathological: release it as decoded. */
const GIVE_UP_AFTER = 256;
const REPLACEMENT = 0xfffd;

export class IncrementalDetokenizer {
  private readonly ids: number[];
  private readonly skip: boolean;
  /** The window starts here; ids before it are final. */
  private prefixOffset: number;
  /** Ids in [prefixOffset, readOffset) decode to `prefixText`, whose text was released (or is prompt context). */
  private readOffset: number;
  private prefixText: string;
  /** Characters of the window's text beyond prefixText already released. */
  private released = 0;
  private text = '';

  constructor(
    private readonly decoder: TokenDecoder,
    options: DetokenizerOptions = {},
  ) {
    this.skip = options.skipSpecialTokens ?? true;
    this.ids = (options.contextTokenIds ?? []).slice(-CONTEXT_TOKENS);
    this.prefixOffset = 0;
    this.readOffset = this.ids.length;
    this.prefixText = this.decode(0, this.readOffset);
    // A prompt cut mid-character would let the output's first bytes complete a character whose
    // start was never released (a lone surrogate at best): decode the output on its own instead.
    if (this.prefixText.charCodeAt(this.prefixText.length - 1) === REPLACEMENT) {
      this.ids.length = 0;
      this.readOffset = 0;
      this.prefixText = '';
    }
  }

  /** All text released so far. */
  get output(): string {
    return this.text;
  }

  /** Appends generated ids and returns the newly stable text (possibly empty). */
  push(newIds: readonly number[]): string {
    for (const id of newIds) this.ids.push(id);
    const window = this.decode(this.prefixOffset, this.ids.length);
    let run = 0;
    while (run < window.length && window.charCodeAt(window.length - 1 - run) === REPLACEMENT) run++;
    if (run === 0) {
      const delta = this.pendingText(window, window.length);
      this.advance(this.ids.length);
      return this.emit(delta);
    }
    const delta = this.pendingText(window, window.length - Math.min(run, MAX_PENDING_REPLACEMENTS));
    this.released += delta.length;
    const pending = this.ids.length - this.readOffset;
    if (pending > REBASE_AFTER && !this.rebase(window, newIds.length + REBASE_AFTER) && pending > GIVE_UP_AFTER) {
      const rest = this.pendingText(window, window.length);
      this.advance(this.ids.length);
      return this.emit(delta + rest);
    }
    return this.emit(delta);
  }

  /** The request finished: releases whatever is pending, U+FFFD included (the bytes never completed). */
  flush(): string {
    const window = this.decode(this.prefixOffset, this.ids.length);
    const rest = this.pendingText(window, window.length);
    this.advance(this.ids.length);
    return this.emit(rest);
  }

  /** The window's unreleased text up to `end`. */
  private pendingText(window: string, end: number): string {
    const start = this.prefixText.length + this.released;
    return end > start ? window.slice(start, end) : '';
  }

  private emit(delta: string): string {
    if (delta.length > 0) this.text += delta;
    return delta;
  }

  private decode(from: number, to: number): string {
    return from >= to ? '' : this.decoder.decode(this.ids.slice(from, to), { skip_special_tokens: this.skip });
  }

  /** Everything up to `readTo` is released: the window restarts at the old read offset. */
  private advance(readTo: number): void {
    this.prefixOffset = this.readOffset;
    this.readOffset = readTo;
    this.prefixText = this.decode(this.prefixOffset, this.readOffset);
    this.released = 0;
  }

  /**
   * A long run of ids without a stable point (each token completing one character and starting
   * the next, or invalid bytes) would make every step decode a growing window. Move the window to
   * the latest id boundary whose decoded head is final: a prefix of the current text, already
   * released. Characters released past that boundary carry over. Only the last `scan` boundaries
   * are tried: older ones were tried by earlier steps, and the release point trails the end by at
   * most a few ids.
   */
  private rebase(window: string, scan: number): boolean {
    const releasedTotal = this.prefixText.length + this.released;
    const lowest = Math.max(this.readOffset + 1, this.ids.length - scan);
    for (let k = this.ids.length - 1; k >= lowest; k--) {
      const head = this.decode(this.prefixOffset, k);
      if (head.length === 0 || head.length > releasedTotal || !window.startsWith(head)) continue;
      this.prefixOffset = this.readOffset;
      this.readOffset = k;
      this.prefixText = this.decode(this.prefixOffset, k);
      this.released = releasedTotal - head.length;
      return true;
    }
    return false;
  }
}
