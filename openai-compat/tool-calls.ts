// Tools on the chat route in OpenAI's shapes: message.tool_calls, and streaming deltas whose
// first entry for a call carries its index, id, type and name (arguments "") and later ones the
// arguments in pieces, as the SDKs' stream helpers accumulate them. A call to a custom tool is
// `{type: "custom", custom: {name, input}}`, its input streamed in pieces when the tool is forced
// (the output is the input) and otherwise in one piece once the call closed (its input is then
// read out of the call's `{"input": …}` arguments). Which tools reach the
// template and how the output is read for calls is the shared tool plan
// (src/server/kit/tool-plan.ts).

import type { FinishReason } from '../src/contracts/generate.js';
import type { GenerationEvent } from '../src/contracts/text-generation.js';
import { AssistantOutputStream, readAssistantOutput, type AssistantDelta, type AssistantOutputPlan } from '../src/assistant-output/index.js';
import type { ChatToolPlan, ReasoningPlan } from '../src/server/kit/tool-plan.js';
import type { ToolCall } from '../src/tool-calls/index.js';
import { NO_CUSTOM_CALLS, type CustomCalls } from './chat-tools.js';
import { customCallInput } from './custom-tools.js';

/** OpenAI's finish reason once calls were made: tool_calls for a natural stop, length stays length. */
export function toolFinishReason(reason: FinishReason | null, calls: number): string | null {
  return reason === 'stop' && calls > 0 ? 'tool_calls' : reason;
}

/** How a choice's text is read: the model's reasoning, then the tool plan's format on the answer. */
function outputPlan(plan: ChatToolPlan, reasoning: ReasoningPlan): AssistantOutputPlan {
  return { reasoning, toolCalls: plan.format, maxCalls: plan.maxCalls };
}

/**
 * A finished choice's assistant message. Reasoning goes to reasoning_content and, under the
 * newer name clients read, reasoning (both only for a model with a reasoning parser).
 */
export function chatMessage(plan: ChatToolPlan, text: string, reasoning: ReasoningPlan = null, custom: CustomCalls = NO_CUSTOM_CALLS): { message: Record<string, unknown>; calls: number } {
  const out = readAssistantOutput(outputPlan(plan, reasoning), text);
  // Plain text keeps its content as generated, even empty, as it always did.
  const content = plan.format === null && reasoning === null ? text : out.content;
  const thinking = reasoning === null ? {} : { reasoning_content: out.reasoning, reasoning: out.reasoning };
  const toolCalls = out.toolCalls.length > 0 ? { tool_calls: out.toolCalls.map((call) => wireCall(call, custom)) } : {};
  return { message: { role: 'assistant', content, refusal: null, ...thinking, ...toolCalls }, calls: out.toolCalls.length };
}

/** A call as message.tool_calls writes it: a custom tool's as a custom call with its input. */
function wireCall(call: ToolCall, custom: CustomCalls): Record<string, unknown> {
  const { name, arguments: args } = call.function;
  if (!custom.names.has(name)) return { ...call };
  return { id: call.id, type: 'custom', custom: { name, input: custom.rawInput ? args : customCallInput(args) } };
}

/** One streamed choice's deltas: text in, OpenAI delta objects out. */
export class ChatDeltaStream {
  private readonly reader: AssistantOutputStream;
  /** The open call to a custom tool whose input is read once it closes: its index and arguments so far. */
  private wrapped: { index: number; args: string } | null = null;

  constructor(
    plan: ChatToolPlan,
    reasoning: ReasoningPlan = null,
    private readonly custom: CustomCalls = NO_CUSTOM_CALLS,
  ) {
    this.reader = new AssistantOutputStream(outputPlan(plan, reasoning));
  }

  get callCount(): number {
    return this.reader.toolCallCount;
  }

  /** The deltas for newly generated text; `last` releases whatever the readers held back. */
  push(text: string, last: boolean): Record<string, unknown>[] {
    const deltas = this.reader.push(text);
    if (last) deltas.push(...this.reader.finish());
    const out = deltas.flatMap((delta) => this.wire(delta));
    if (last) out.push(...this.closeWrapped());
    return out;
  }

  private wire(delta: AssistantDelta): Record<string, unknown>[] {
    if (delta.kind === 'reasoning') return [{ reasoning_content: delta.text, reasoning: delta.text }];
    if (delta.kind === 'content') return [...this.closeWrapped(), { content: delta.text }];
    if (delta.kind === 'call') {
      const closed = this.closeWrapped();
      if (!this.custom.names.has(delta.name)) return [...closed, { tool_calls: [{ index: delta.index, id: delta.id, type: 'function', function: { name: delta.name, arguments: '' } }] }];
      if (!this.custom.rawInput) this.wrapped = { index: delta.index, args: '' };
      return [...closed, { tool_calls: [{ index: delta.index, id: delta.id, type: 'custom', custom: { name: delta.name, input: '' } }] }];
    }
    if (this.wrapped?.index === delta.index) {
      this.wrapped.args += delta.text;
      return [];
    }
    if (this.custom.rawInput) return [{ tool_calls: [{ index: delta.index, custom: { input: delta.text } }] }];
    return [{ tool_calls: [{ index: delta.index, function: { arguments: delta.text } }] }];
  }

  /** The input of the custom call that was open, in one piece, now that its arguments are complete. */
  private closeWrapped(): Record<string, unknown>[] {
    const open = this.wrapped;
    if (open === null) return [];
    this.wrapped = null;
    const input = customCallInput(open.args);
    return input === '' ? [] : [{ tool_calls: [{ index: open.index, custom: { input } }] }];
  }
}

/**
 * The chat.completion.chunk choice entries of every choice of a stream: the role with a choice's
 * first entry, logprobs with the first entry of their event, the finish reason with the last.
 */
export class ChatChunks {
  private readonly streams: ChatDeltaStream[];
  private readonly started = new Set<number>();

  constructor(
    private readonly plan: ChatToolPlan,
    choices: number,
    private readonly reasoning: ReasoningPlan = null,
    custom: CustomCalls = NO_CUSTOM_CALLS,
  ) {
    this.streams = Array.from({ length: choices }, () => new ChatDeltaStream(plan, reasoning, custom));
  }

  entries(index: number, event: GenerationEvent, logprobs: readonly unknown[]): Record<string, unknown>[] | null {
    const stream = this.streams[index]!;
    const pieces = stream.push(event.text, event.finishReason !== null);
    if (pieces.length === 0 && logprobs.length === 0 && event.finishReason === null) return null;
    if (pieces.length === 0) pieces.push({});
    // Plain text opens with content "" as it always did; a reader that may hold text back opens with null.
    if (!this.started.has(index)) pieces[0] = { role: 'assistant', content: this.plan.format === null && this.reasoning === null ? '' : null, ...pieces[0] };
    this.started.add(index);
    const finish = toolFinishReason(event.finishReason, stream.callCount);
    return pieces.map((delta, i) => ({
      index,
      delta,
      logprobs: i === 0 && logprobs.length > 0 ? { content: logprobs, refusal: null } : null,
      finish_reason: i === pieces.length - 1 ? finish : null,
    }));
  }
}
