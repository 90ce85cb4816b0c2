// The reasoning split as the text streams: each push returns only what became certain — reasoning
// appended, content appended — and nothing sent is ever taken back. Text that may still turn out
// to be a tag (a `<th` at the start, a `</thi` inside the block) and whitespace that may turn out
// to be the block's trailing space are held until the next piece decides them. Accumulated, the
// pieces equal splitReasoning of the whole text, however the text was cut.

import type { ReasoningPlan } from './formats.js';

export interface ReasoningDeltas {
  /** Reasoning text appended; '' when none. */
  readonly reasoning: string;
  /** Content text appended; '' when none. */
  readonly content: string;
}

/** Characters at the end of `text` that could be the first characters of `marker`. */
function heldPrefixLength(text: string, marker: string): number {
  for (let k = Math.min(marker.length - 1, text.length); k > 0; k--) if (text.endsWith(marker.slice(0, k))) return k;
  return 0;
}

type Phase = 'start' | 'inside' | 'after' | 'none';

export class ReasoningStream {
  private phase: Phase = 'start';
  /** Text received and not yet released. */
  private pending = '';
  /** Whitespace at the end of the reasoning so far: released only if more reasoning follows. */
  private reasoningTail = '';
  private reasoningStarted = false;
  private contentStarted = false;

  constructor(private readonly plan: ReasoningPlan) {}

  /** True once the block closed (or the output turned out to have none): what follows is content. */
  get inAnswer(): boolean {
    return this.phase === 'after' || this.phase === 'none';
  }

  push(text: string): ReasoningDeltas {
    this.pending += text;
    return this.advance(false);
  }

  /** The end of the output: whatever was held back is decided. */
  finish(): ReasoningDeltas {
    return this.advance(true);
  }

  private advance(final: boolean): ReasoningDeltas {
    const out = { reasoning: '', content: '' };
    const { startTag, endTag } = this.plan.format;
    if (this.phase === 'start') {
      const rest = this.pending.trimStart();
      if (rest.startsWith(startTag)) {
        this.phase = 'inside';
        this.pending = rest.slice(startTag.length);
      } else if (!final && startTag.startsWith(rest)) {
        return out;
      } else {
        this.phase = this.plan.startsInside ? 'inside' : 'none';
      }
    }
    if (this.phase === 'inside') {
      const end = this.pending.indexOf(endTag);
      if (end < 0) {
        const keep = final ? 0 : heldPrefixLength(this.pending, endTag);
        out.reasoning = this.reasoningPiece(this.pending.slice(0, this.pending.length - keep), final);
        this.pending = this.pending.slice(this.pending.length - keep);
        return out;
      }
      out.reasoning = this.reasoningPiece(this.pending.slice(0, end), true);
      this.pending = this.pending.slice(end + endTag.length);
      this.phase = 'after';
    }
    if (this.phase === 'after' && !this.contentStarted) {
      this.pending = this.pending.trimStart();
      this.contentStarted = this.pending !== '';
    }
    out.content = this.pending;
    this.pending = '';
    return out;
  }

  /** Reasoning text to release, trimmed at the block's start and, once `closing`, at its end. */
  private reasoningPiece(piece: string, closing: boolean): string {
    let text = this.reasoningTail + piece;
    if (!this.reasoningStarted) text = text.trimStart();
    const body = text.trimEnd();
    this.reasoningTail = closing ? '' : text.slice(body.length);
    if (body !== '') this.reasoningStarted = true;
    return body;
  }
}
