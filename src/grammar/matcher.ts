// One request's grammar state: the next-token mask, accepted tokens, and resynchronisation with
// the request's output after anything that changed it behind the matcher's back (preemption and
// recompute keep the output, a dropped step does not). The mask is xgrammar's bitmask: bit
// (id & 31) of word (id >> 5) set when token id is allowed.
//
// xgrammar does not hold a byte-level output to UTF-8 (see utf8-guard.ts), so the matcher keeps
// the output's UTF-8 state beside xgrammar's: each mask is ANDed with that state's tokens and a
// token that would break UTF-8 is refused before xgrammar sees it. Likewise what a JSON schema's
// grammar leaves to the string guard (string lengths, string items that must differ): the
// guard's cursor after each token, its mask ANDed in, a token that breaks it refused.

import type * as XGrammar from '@mlc-ai/web-xgrammar';
import type { GuardPlan } from './json-schema/guard-places.js';
import type { GuardVocabulary } from './guard-vocabulary.js';
import { GuardCursor } from './string-guard.js';
import { UTF8_INVALID, Utf8State, type Utf8Guard } from './utf8-guard.js';

type GrammarMatcher = XGrammar.GrammarMatcher;

export class ConstraintMatcher {
  /** The output tokens the matcher has accepted, in order. */
  private readonly accepted: number[] = [];
  /** The UTF-8 state after each accepted token (states[i] after accepted[i]). */
  private readonly utf8States: number[] = [];
  /** With a length plan: the cursor after each accepted token (cursors[i] after accepted[i]). */
  private readonly cursors: GuardCursor[] = [];
  private readonly start: GuardCursor;

  constructor(
    private readonly handle: GrammarMatcher,
    private readonly utf8: Utf8Guard,
    /** Logits row length the masks cover. */
    readonly vocabSize: number,
    /** What a JSON schema's grammar leaves to the string guard (string-guard.ts), and the vocabulary's tables for it. */
    private readonly guard: { readonly plan: GuardPlan; readonly vocabulary: GuardVocabulary } | null = null,
  ) {
    this.start = GuardCursor.start(guard?.plan ?? null);
  }

  get numAccepted(): number {
    return this.accepted.length;
  }

  /** The allowed next tokens as a bitmask of ceil(vocabSize / 32) words. */
  async nextTokenMask(): Promise<Int32Array> {
    const mask = this.utf8.restrict(await this.handle.getNextTokenBitmask(), this.utf8State);
    return this.guard === null ? mask : this.cursor.restrict(this.guard.plan, this.guard.vocabulary, mask);
  }

  private get cursor(): GuardCursor {
    return this.cursors.at(-1) ?? this.start;
  }

  /** Advances by one sampled token; false (and no change) when the grammar or UTF-8 does not allow it. */
  accept(tokenId: number): boolean {
    const next = this.utf8.after(this.utf8State, tokenId);
    if (next === UTF8_INVALID) return false;
    let cursor: GuardCursor | null = null;
    if (this.guard !== null) {
      const bytes = this.guard.vocabulary.bytes[tokenId];
      cursor = bytes === undefined ? this.cursor : this.cursor.advance(this.guard.plan, bytes);
      if (cursor === null) return false;
    }
    if (!this.handle.acceptToken(tokenId)) return false;
    this.accepted.push(tokenId);
    this.utf8States.push(next);
    if (cursor !== null) this.cursors.push(cursor);
    return true;
  }

  /** Where the output stands in its current UTF-8 character. */
  get utf8State(): number {
    return this.utf8States.at(-1) ?? Utf8State.COMPLETE;
  }

  /** True once a stop token ended the grammar: nothing more may follow. */
  isTerminated(): boolean {
    return this.handle.isTerminated();
  }

  /**
   * Brings the matcher to the state after `output`: rolls back what it accepted past their common
   * prefix, then accepts the rest. Returns false when `output` breaks the grammar (the matcher is
   * then at the longest prefix it allowed).
   */
  syncTo(output: ArrayLike<number>): boolean {
    let common = 0;
    while (common < this.accepted.length && common < output.length && this.accepted[common] === output[common]) common++;
    if (common < this.accepted.length) this.rollBack(this.accepted.length - common);
    for (let i = common; i < output.length; i++) if (!this.accept(output[i]!)) return false;
    return true;
  }

  /** Undoes the last `n` accepted tokens (or starts over when that is all of them). */
  rollBack(n: number): void {
    if (n <= 0) return;
    if (n >= this.accepted.length) {
      this.handle.reset();
      this.accepted.length = 0;
      this.utf8States.length = 0;
      this.cursors.length = 0;
      return;
    }
    this.handle.rollBack(n);
    this.accepted.length -= n;
    this.utf8States.length -= n;
    if (this.guard !== null) this.cursors.length -= n;
  }

  dispose(): void {
    this.handle.dispose();
  }
}
