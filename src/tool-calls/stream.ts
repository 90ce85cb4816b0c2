// Tool calls out of generated text, whole or as the text streams. The streaming parser re-reads
// the text so far with the format's pure reading after every delta and sends only what grew:
// content appended, a new call (its id and name first, arguments ""), arguments appended. The
// format's reading is append-only by design; a reading that would take back something already
// sent is a parser bug, and the stream refuses it rather than send a contradiction.

import { randomBytes } from 'node:crypto';
import type { ParsedToolCall } from '../contracts/tools.js';
import type { ToolCallFormat } from './formats.js';

/** OpenAI-style call ids: `call_` and 24 random alphanumerics. */
export function newToolCallId(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return `call_${[...randomBytes(24)].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

export interface ToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: ParsedToolCall;
}

export interface ParsedMessage {
  /** Text outside the calls; null when there is none. */
  readonly content: string | null;
  readonly toolCalls: readonly ToolCall[];
}

export interface ParseOptions {
  /** At most this many calls are kept (1 for parallel_tool_calls false). */
  readonly maxCalls?: number;
  readonly newId?: () => string;
}

/** The finished text of one choice, read once. */
export function parseToolCalls(format: ToolCallFormat, text: string, options: ParseOptions = {}): ParsedMessage {
  const { content, calls } = format.parse(text, true);
  const newId = options.newId ?? newToolCallId;
  const kept = calls.slice(0, options.maxCalls ?? calls.length);
  return { content: content === '' ? null : content, toolCalls: kept.map((call) => ({ id: newId(), type: 'function', function: call })) };
}

/** What a stream sends next, in order: content, a call's opening, or a piece of its arguments. */
export type ToolCallDelta =
  | { readonly kind: 'content'; readonly text: string }
  | { readonly kind: 'call'; readonly index: number; readonly id: string; readonly name: string }
  | { readonly kind: 'arguments'; readonly index: number; readonly text: string };

export class ToolCallStream {
  private text = '';
  private sentContent = '';
  private readonly sent: ParsedToolCall[] = [];
  private readonly maxCalls: number;
  private readonly newId: () => string;

  constructor(
    private readonly format: ToolCallFormat,
    options: ParseOptions = {},
  ) {
    this.maxCalls = options.maxCalls ?? Number.POSITIVE_INFINITY;
    this.newId = options.newId ?? newToolCallId;
  }

  /** Calls sent so far. */
  get callCount(): number {
    return this.sent.length;
  }

  push(delta: string): ToolCallDelta[] {
    this.text += delta;
    return this.advance(false);
  }

  /** The end of the text: whatever was held back is read for good. */
  finish(): ToolCallDelta[] {
    return this.advance(true);
  }

  private advance(final: boolean): ToolCallDelta[] {
    const { content, calls } = this.format.parse(this.text, final);
    const out: ToolCallDelta[] = [];
    if (!content.startsWith(this.sentContent)) throw new Error(`${this.format.name} tool-call parser took back content already sent`);
    if (content.length > this.sentContent.length) out.push({ kind: 'content', text: content.slice(this.sentContent.length) });
    this.sentContent = content;
    calls.slice(0, this.maxCalls).forEach((call, index) => {
      const before = this.sent[index];
      if (before === undefined) out.push({ kind: 'call', index, id: this.newId(), name: call.name });
      else if (before.name !== call.name || !call.arguments.startsWith(before.arguments)) throw new Error(`${this.format.name} tool-call parser rewrote call ${index} after sending it`);
      const sentArgs = before?.arguments.length ?? 0;
      if (call.arguments.length > sentArgs) out.push({ kind: 'arguments', index, text: call.arguments.slice(sentArgs) });
      this.sent[index] = call;
    });
    return out;
  }
}
