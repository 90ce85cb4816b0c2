// Reasoning tokens counted on token ids, as the engine sees the block (ThinkingSpec): the tokens
// strictly inside it, the opening and closing ids not counted. This is usage's
// completion_tokens_details.reasoning_tokens; it needs no text, so every front end reports the
// same number the engine budgets against.

import type { ThinkingSpec } from '../contracts/generate.js';

export class ThinkingTokenCounter {
  private phase: 'start' | 'inside' | 'after';
  /** Output tokens seen so far (to match startTokenIds at the output's start). */
  private seen = 0;
  private inside = 0;
  /** The most recent ids inside the block, enough to recognise a multi-token end. */
  private readonly recent: number[] = [];

  constructor(private readonly spec: ThinkingSpec) {
    this.phase = spec.startsInside ? 'inside' : 'start';
  }

  /** Tokens inside the block so far. */
  get count(): number {
    return this.inside;
  }

  push(tokenIds: readonly number[]): void {
    for (const id of tokenIds) this.pushOne(id);
  }

  private pushOne(id: number): void {
    const { startTokenIds, endTokenIds } = this.spec;
    const position = this.seen++;
    if (this.phase === 'start') {
      // The block is open only if the output begins with the start ids; any other first token means no block.
      if (startTokenIds[position] !== id) this.phase = 'after';
      else if (position === startTokenIds.length - 1) this.phase = 'inside';
      return;
    }
    if (this.phase !== 'inside') return;
    this.inside += 1;
    this.recent.push(id);
    if (this.recent.length > endTokenIds.length) this.recent.shift();
    if (this.recent.length === endTokenIds.length && this.recent.every((v, i) => v === endTokenIds[i])) {
      this.inside -= endTokenIds.length;
      this.phase = 'after';
    }
  }
}
