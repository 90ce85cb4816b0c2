// The assistant's output as Anthropic content blocks, read once for both answers: the streaming
// reader turns generated text into content_block_start / _delta / _stop events (text_delta,
// input_json_delta for a tool_use block's input, thinking_delta), and a non-streaming answer is
// those same events folded into blocks, so `messages.create` and the SDK's accumulated
// `messages.stream` give the same content by construction. The shared assistant-output reader
// (src/assistant-output) splits the text: the thinking block (the model's reasoning_parser) into
// thinking blocks, then the answer's tool calls (the model's tool_call_parser or the tool_choice
// constraint's format) into tool_use blocks, the rest into text blocks.

import { randomBytes } from 'node:crypto';
import { AssistantOutputStream, type AssistantDelta, type AssistantOutputPlan } from '../src/assistant-output/index.js';
import type { ChatToolPlan } from '../src/server/kit/tool-plan.js';
import { isObject } from '../src/server/kit/body.js';

export type ContentBlock = { type: 'text'; text: string } | { type: 'thinking'; thinking: string; signature: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export type BlockDelta = { type: 'text_delta'; text: string } | { type: 'thinking_delta'; thinking: string } | { type: 'input_json_delta'; partial_json: string };

export type BlockEvent =
  | { type: 'content_block_start'; index: number; content_block: ContentBlock }
  | { type: 'content_block_delta'; index: number; delta: BlockDelta }
  | { type: 'content_block_stop'; index: number };

/** Anthropic's tool_use ids: `toolu_` and 24 base-62 characters. */
export function newToolUseId(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return `toolu_${[...randomBytes(24)].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

type OpenKind = 'text' | 'thinking' | 'tool_use';

/** How a request's thinking block is read (LlmModel.reasoningOf); null for a model without a reasoning_parser. */
export type ReasoningOfModel = AssistantOutputPlan['reasoning'];

/**
 * Output pieces in, block events out: a block opens when its kind of output starts and closes
 * when another begins or the output ends. Whitespace the model writes around tool calls belongs
 * to no block: a text block's trailing whitespace waits until more text follows it, and text
 * after the first call is held and sent, trimmed, as one text block after the calls (the
 * tool-call reader cannot place it between them, and an arguments delta must reach the open block).
 */
export class ContentBlockStream {
  private readonly reader: AssistantOutputStream;
  private open: OpenKind | null = null;
  private index = -1;
  /** Trailing whitespace of the open text, sent only once more text follows. */
  private pendingSpace = '';
  /** Text read after the first call opened; null until then. */
  private afterCalls: string | null = null;

  /** `reasoning`: the model's reading of this request's thinking block (LlmModel.reasoningOf), null for a model without a reasoning_parser. */
  constructor(plan: ChatToolPlan, reasoning: ReasoningOfModel) {
    this.reader = new AssistantOutputStream({ reasoning, toolCalls: plan.format, maxCalls: plan.maxCalls, newId: newToolUseId });
  }

  get callCount(): number {
    return this.reader.toolCallCount;
  }

  /** The events for newly generated text; `last` releases what the reader held back and closes whatever is open. */
  push(text: string, last: boolean): BlockEvent[] {
    const pieces = this.reader.push(text);
    if (last) pieces.push(...this.reader.finish());
    const out: BlockEvent[] = [];
    for (const piece of pieces) out.push(...this.piece(piece));
    if (last) out.push(...this.end());
    return out;
  }

  private piece(piece: AssistantDelta): BlockEvent[] {
    switch (piece.kind) {
      case 'content':
        return this.text(piece.text);
      case 'reasoning':
        return [...this.ensure('thinking', { type: 'thinking', thinking: '', signature: '' }), this.delta({ type: 'thinking_delta', thinking: piece.text })];
      case 'call':
        this.pendingSpace = '';
        this.afterCalls ??= '';
        // Each call is a block of its own, even right after another.
        return [...this.close(), ...this.start('tool_use', { type: 'tool_use', id: piece.id, name: piece.name, input: {} })];
      case 'arguments':
        return [this.delta({ type: 'input_json_delta', partial_json: piece.text })];
    }
  }

  private text(text: string): BlockEvent[] {
    if (this.afterCalls !== null) {
      this.afterCalls += text;
      return [];
    }
    const combined = this.pendingSpace + text;
    const body = combined.trimEnd();
    this.pendingSpace = combined.slice(body.length);
    if (body === '') return [];
    return [...this.ensure('text', { type: 'text', text: '' }), this.delta({ type: 'text_delta', text: body })];
  }

  private end(): BlockEvent[] {
    const tail = this.afterCalls?.trim() ?? '';
    const trailing = tail === '' ? [] : [...this.close(), ...this.start('text', { type: 'text', text: '' }), this.delta({ type: 'text_delta', text: tail })];
    return [...trailing, ...this.close()];
  }

  private ensure(kind: OpenKind, block: ContentBlock): BlockEvent[] {
    return this.open === kind ? [] : [...this.close(), ...this.start(kind, block)];
  }

  private start(kind: OpenKind, block: ContentBlock): BlockEvent[] {
    this.open = kind;
    this.index += 1;
    return [{ type: 'content_block_start', index: this.index, content_block: block }];
  }

  private delta(delta: BlockDelta): BlockEvent {
    return { type: 'content_block_delta', index: this.index, delta };
  }

  private close(): BlockEvent[] {
    if (this.open === null) return [];
    this.open = null;
    return [{ type: 'content_block_stop', index: this.index }];
  }
}

/** A tool_use block's input from its streamed JSON; text cut short by max_tokens that is no object reads as {}. */
function parseInput(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

/** Block events folded into the content array, as Anthropic's SDKs accumulate a stream. */
export function foldBlocks(events: readonly BlockEvent[]): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  const inputs = new Map<number, string>();
  for (const event of events) {
    if (event.type === 'content_block_start') blocks[event.index] = { ...event.content_block };
    else if (event.type === 'content_block_delta') {
      const block = blocks[event.index]!;
      const { delta } = event;
      if (delta.type === 'text_delta' && block.type === 'text') block.text += delta.text;
      else if (delta.type === 'thinking_delta' && block.type === 'thinking') block.thinking += delta.thinking;
      else if (delta.type === 'input_json_delta') inputs.set(event.index, (inputs.get(event.index) ?? '') + delta.partial_json);
    }
  }
  for (const [index, json] of inputs) {
    const block = blocks[index];
    if (block?.type === 'tool_use') block.input = parseInput(json);
  }
  return blocks;
}
