// One request's grammar state: the next-token mask, accepted tokens, and resynchronisation with
// the request's output after anything that changed it behind the matcher's back (preemption and
// recompute keep the output, a dropped step does not). The mask is xgrammar's bitmask: bit
// (id & 31) of word (id >> 5) set when token id is allowed.

import type * as XGrammar from '@mlc-ai/web-xgrammar';

type GrammarMatcher = XGrammar.GrammarMatcher;

export class ConstraintMatcher {
  /** The output tokens the matcher has accepted, in order. */
  private readonly accepted: number[] = [];

  constructor(
    private readonly handle: GrammarMatcher,
    /** Logits row length the masks cover. */
    readonly vocabSize: number,
  ) {}

  get numAccepted(): number {
    return this.accepted.length;
  }

  /** The allowed next tokens as a bitmask of ceil(vocabSize / 32) words. */
  nextTokenMask(): Promise<Int32Array> {
    return this.handle.getNextTokenBitmask();
  }

  /** Advances by one sampled token; false (and no change) when the grammar does not allow it. */
  accept(tokenId: number): boolean {
    if (!this.handle.acceptToken(tokenId)) return false;
    this.accepted.push(tokenId);
    return true;
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
      return;
    }
    this.handle.rollBack(n);
    this.accepted.length -= n;
  }

  dispose(): void {
    this.handle.dispose();
  }
}
