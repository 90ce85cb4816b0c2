// Tools on the chat route in OpenAI's shapes: message.tool_calls, and streaming deltas whose
// first entry for a call carries its index, id, type and name (arguments "") and later ones the
// arguments in pieces, as the SDKs' stream helpers accumulate them. Which tools reach the
// template and how the output is read for calls is the shared tool plan
// (src/server/kit/tool-plan.ts).

import type { FinishReason } from '../src/contracts/generate.js';
import type { GenerationEvent } from '../src/contracts/text-generation.js';
import { AssistantOutputStream, readAssistantOutput, type AssistantDelta, type AssistantOutputPlan } from '../src/assistant-output/index.js';
import type { ChatToolPlan, ReasoningPlan } from '../src/server/kit/tool-plan.js';

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
export function chatMessage(plan: ChatToolPlan, text: string, reasoning: ReasoningPlan = null): { message: Record<string, unknown>; calls: number } {
  const out = readAssistantOutput(outputPlan(plan, reasoning), text);
  // Plain text keeps its content as generated, even empty, as it always did.
  const content = plan.format === null && reasoning === null ? text : out.content;
  const thinking = reasoning === null ? {} : { reasoning_content: out.reasoning, reasoning: out.reasoning };
  const toolCalls = out.toolCalls.length > 0 ? { tool_calls: out.toolCalls } : {};
  return { message: { role: 'assistant', content, refusal: null, ...thinking, ...toolCalls }, calls: out.toolCalls.length };
}

/** One streamed choice's deltas: text in, OpenAI delta objects out. */
export class ChatDeltaStream {
  private readonly reader: AssistantOutputStream;

  constructor(plan: ChatToolPlan, reasoning: ReasoningPlan = null) {
    this.reader = new AssistantOutputStream(outputPlan(plan, reasoning));
  }

  get callCount(): number {
    return this.reader.toolCallCount;
  }

  /** The deltas for newly generated text; `last` releases whatever the readers held back. */
  push(text: string, last: boolean): Record<string, unknown>[] {
    const deltas = this.reader.push(text);
    if (last) deltas.push(...this.reader.finish());
    return deltas.map(wireDelta);
  }
}

function wireDelta(delta: AssistantDelta): Record<string, unknown> {
  if (delta.kind === 'reasoning') return { reasoning_content: delta.text, reasoning: delta.text };
  if (delta.kind === 'content') return { content: delta.text };
  if (delta.kind === 'call') return { tool_calls: [{ index: delta.index, id: delta.id, type: 'function', function: { name: delta.name, arguments: '' } }] };
  return { tool_calls: [{ index: delta.index, function: { arguments: delta.text } }] };
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
  ) {
    this.streams = Array.from({ length: choices }, () => new ChatDeltaStream(plan, reasoning));
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
