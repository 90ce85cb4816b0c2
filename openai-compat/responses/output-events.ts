// A response's output as it is generated: the pieces the output reader splits the text into
// (reasoning, content, a call's opening, its arguments) become output items — reasoning,
// message, function_call or custom_tool_call, in the order the model wrote them — and the Responses streaming events
// that build them: output_item.added, content_part.added, the deltas, then the .done events
// closing each item before the next opens. The non-streaming answer runs the same machine and
// keeps only the items, so a stream always accumulates to exactly the non-streamed output.

import { randomBytes } from 'node:crypto';
import type { ToolCallDelta } from '../../src/tool-calls/index.js';
import { customCallInput } from '../custom-tools.js';

/** What the output reader yields, in order. */
export type OutputPart = ToolCallDelta | { readonly kind: 'reasoning'; readonly text: string };

export type WireObject = Record<string, unknown>;

/** A streaming event before numbering: its type and fields. */
export interface OutputEvent extends WireObject {
  readonly type: string;
}

/** OpenAI-style ids: a prefix (resp, msg, fc, rs) and random hex. */
export function newItemId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

type OpenItem =
  | { readonly kind: 'message' | 'reasoning'; readonly id: string; readonly index: number; text: string }
  | { readonly kind: 'function_call' | 'custom_tool_call'; readonly id: string; readonly index: number; readonly callIndex: number; readonly callId: string; readonly name: string; args: string };

/**
 * How calls to custom tools read: their names, and whether a call's arguments are the input
 * itself (a forced custom tool: the output is the input, streamed as it comes) or the model's
 * own call format's `{"input": …}` object (tool_choice auto: the input is known once it closes).
 */
export interface CustomCalls {
  readonly names: ReadonlySet<string>;
  readonly rawInput: boolean;
}

const NO_CUSTOM: CustomCalls = { names: new Set(), rawInput: false };

const outputText = (text: string): WireObject => ({ type: 'output_text', text, annotations: [], logprobs: [] });
const reasoningText = (text: string): WireObject => ({ type: 'reasoning_text', text });

function itemObject(item: OpenItem, status: ItemStatus): WireObject {
  switch (item.kind) {
    case 'message':
      return { id: item.id, type: 'message', status, role: 'assistant', content: status === 'in_progress' ? [] : [outputText(item.text)] };
    case 'reasoning':
      return { id: item.id, type: 'reasoning', status, summary: [], content: status === 'in_progress' ? [] : [reasoningText(item.text)] };
    case 'function_call':
      return { id: item.id, type: 'function_call', status, call_id: item.callId, name: item.name, arguments: status === 'in_progress' ? '' : item.args };
    case 'custom_tool_call':
      return { id: item.id, type: 'custom_tool_call', status, call_id: item.callId, name: item.name, input: status === 'in_progress' ? '' : item.args };
  }
}

export class ResponseOutput {
  /** Finished items, by output_index. */
  readonly items: WireObject[] = [];
  private open: OpenItem | null = null;
  private calls = 0;

  constructor(
    private readonly newId: (prefix: string) => string = newItemId,
    private readonly custom: CustomCalls = NO_CUSTOM,
  ) {}

  /** Function calls in the output so far. */
  get callCount(): number {
    return this.calls;
  }

  /** The events that take the output through `parts`. */
  push(parts: readonly OutputPart[]): OutputEvent[] {
    const events: OutputEvent[] = [];
    for (const part of parts) events.push(...this.part(part));
    return events;
  }

  /** Closes the last item; an output with no item gets an empty message, as every response has something to read. */
  finish(status: 'completed' | 'incomplete'): OutputEvent[] {
    const events = this.items.length === 0 && this.open === null ? this.openItem('message') : [];
    return [...events, ...this.close(status)];
  }

  private part(part: OutputPart): OutputEvent[] {
    if (part.kind === 'call') return this.openCall(part.index, part.id, part.name);
    const open = this.open;
    if (part.kind === 'arguments') {
      // The tool-call stream sends a call's arguments right after its opening, before anything else.
      if ((open?.kind !== 'function_call' && open?.kind !== 'custom_tool_call') || open.callIndex !== part.index)
        throw new Error(`arguments for call ${part.index} arrived after that call was closed`);
      open.args += part.text;
      if (open.kind === 'function_call') return [{ type: 'response.function_call_arguments.delta', item_id: open.id, output_index: open.index, delta: part.text }];
      return this.custom.rawInput ? [{ type: 'response.custom_tool_call_input.delta', item_id: open.id, output_index: open.index, delta: part.text }] : [];
    }
    if (part.text === '') return [];
    const kind = part.kind === 'content' ? 'message' : 'reasoning';
    const events = open?.kind === kind ? [] : [...this.close('completed'), ...this.openItem(kind)];
    const item = this.open as Extract<OpenItem, { kind: 'message' | 'reasoning' }>;
    item.text += part.text;
    const delta = kind === 'message' ? { type: 'response.output_text.delta', logprobs: [] } : { type: 'response.reasoning_text.delta' };
    events.push({ ...delta, item_id: item.id, output_index: item.index, content_index: 0, delta: part.text });
    return events;
  }

  private openItem(kind: 'message' | 'reasoning'): OutputEvent[] {
    const item: OpenItem = { kind, id: this.newId(kind === 'message' ? 'msg' : 'rs'), index: this.items.length, text: '' };
    this.open = item;
    const part = kind === 'message' ? outputText('') : reasoningText('');
    return [
      { type: 'response.output_item.added', output_index: item.index, item: itemObject(item, 'in_progress') },
      { type: 'response.content_part.added', item_id: item.id, output_index: item.index, content_index: 0, part },
    ];
  }

  private openCall(callIndex: number, callId: string, name: string): OutputEvent[] {
    const events = this.close('completed');
    const custom = this.custom.names.has(name);
    const item: OpenItem = { kind: custom ? 'custom_tool_call' : 'function_call', id: this.newId(custom ? 'ctc' : 'fc'), index: this.items.length, callIndex, callId, name, args: '' };
    this.open = item;
    this.calls += 1;
    events.push({ type: 'response.output_item.added', output_index: item.index, item: itemObject(item, 'in_progress') });
    return events;
  }

  private close(status: 'completed' | 'incomplete'): OutputEvent[] {
    const item = this.open;
    if (item === null) return [];
    this.open = null;
    // A wrapped custom input is known once its arguments object closed: one delta then.
    const wrapped = item.kind === 'custom_tool_call' && !this.custom.rawInput;
    if (wrapped) item.args = customCallInput(item.args);
    const done = itemObject(item, status);
    this.items.push(done);
    const closing = closingEvents(item, { item_id: item.id, output_index: item.index }, wrapped);
    return [...closing, { type: 'response.output_item.done', output_index: item.index, item: done }];
  }
}

/** The events that finish an item's content before its output_item.done. */
function closingEvents(item: OpenItem, at: { readonly item_id: string; readonly output_index: number }, wrapped: boolean): OutputEvent[] {
  switch (item.kind) {
    case 'function_call':
      return [{ type: 'response.function_call_arguments.done', ...at, arguments: item.args }];
    case 'custom_tool_call': {
      const delta: OutputEvent[] = wrapped && item.args !== '' ? [{ type: 'response.custom_tool_call_input.delta', ...at, delta: item.args }] : [];
      return [...delta, { type: 'response.custom_tool_call_input.done', ...at, input: item.args }];
    }
    case 'message':
      return [
        { type: 'response.output_text.done', ...at, content_index: 0, text: item.text, logprobs: [] },
        { type: 'response.content_part.done', ...at, content_index: 0, part: outputText(item.text) },
      ];
    case 'reasoning':
      return [
        { type: 'response.reasoning_text.done', ...at, content_index: 0, text: item.text },
        { type: 'response.content_part.done', ...at, content_index: 0, part: reasoningText(item.text) },
      ];
  }
}
