// Tools on the chat route: which tools reach the chat template, how the output is read for
// calls (the model's tool_call_parser under tool_choice auto; nothing under none), and the
// OpenAI shapes of what is read — message.tool_calls, and streaming deltas whose first entry
// for a call carries its index, id, type and name (arguments "") and later ones the arguments
// in pieces, as the SDKs' stream helpers accumulate them.

import type { FinishReason, GrammarSpec } from '../src/contracts/generate.js';
import type { GenerationEvent } from '../src/contracts/text-generation.js';
import type { FunctionTool, ToolRequest } from '../src/contracts/tools.js';
import { invalidArg } from '../src/errors.js';
import type { LlmModel } from '../src/serving/llm-backend.js';
import { constrainedToolCalls, parseToolCalls, TOOL_CALL_FORMATS, ToolCallStream, type ToolCallDelta, type ToolCallFormat } from '../src/tool-calls/index.js';
import { parseToolRequest } from '../src/vocabulary/index.js';
import type { Body } from './request-fields.js';

export interface ChatToolPlan {
  /** Rendered by the chat template as `tools`; null without tools. */
  readonly tools: readonly FunctionTool[] | null;
  /** How the output is read for calls; null: the output is all content. */
  readonly format: ToolCallFormat | null;
  /** 1 when parallel_tool_calls is false. */
  readonly maxCalls: number | undefined;
  /** The constraint of tool_choice required or a named function; absent when the model chooses. */
  readonly grammar?: GrammarSpec;
}

const NO_TOOLS: ChatToolPlan = { tools: null, format: null, maxCalls: undefined };

/** Checks the tool fields (400 naming the field) and decides how this model's output is read. */
export function chatToolPlan(body: Body, model: LlmModel): ChatToolPlan {
  const request: ToolRequest = parseToolRequest(body);
  if (request.tools.length === 0) return NO_TOOLS;
  const maxCalls = request.parallelToolCalls ? undefined : 1;
  // As vLLM does by default, tool_choice none still shows the model its tools; only the reading is off.
  if (request.choice.kind === 'none') return { tools: request.tools, format: null, maxCalls };
  // required / named: the engine's grammar makes the output a call to an allowed function, read back by the constraint's own format.
  const constrained = constrainedToolCalls(request);
  if (constrained !== null) return { tools: request.tools, format: constrained.format, maxCalls, grammar: constrained.grammar };
  if (model.toolCallParser === null) {
    throw invalidArg(`model '${model.name}' has no tool_call_parser parameter, so its tool calls cannot be read; tool_choice "auto" needs one (hermes, llama3_json or mistral)`, 'tools');
  }
  return { tools: request.tools, format: TOOL_CALL_FORMATS[model.toolCallParser], maxCalls };
}

/** Markers that are special tokens must survive detokenization for the parser to see them. */
export function keepsSpecialTokens(plan: ChatToolPlan, skipSpecialTokens: unknown): unknown {
  return plan.format?.needsSpecialTokens && (skipSpecialTokens === undefined || skipSpecialTokens === null) ? false : skipSpecialTokens;
}

/** OpenAI's finish reason once calls were made: tool_calls for a natural stop, length stays length. */
export function toolFinishReason(reason: FinishReason | null, calls: number): string | null {
  return reason === 'stop' && calls > 0 ? 'tool_calls' : reason;
}

/** A finished choice's assistant message. */
export function chatMessage(plan: ChatToolPlan, text: string): { message: Record<string, unknown>; calls: number } {
  if (plan.format === null) return { message: { role: 'assistant', content: text, refusal: null }, calls: 0 };
  const parsed = parseToolCalls(plan.format, text, plan.maxCalls === undefined ? {} : { maxCalls: plan.maxCalls });
  const toolCalls = parsed.toolCalls.length > 0 ? { tool_calls: parsed.toolCalls } : {};
  return { message: { role: 'assistant', content: parsed.content, refusal: null, ...toolCalls }, calls: parsed.toolCalls.length };
}

/** One streamed choice's deltas: text in, OpenAI delta objects out. */
export class ChatDeltaStream {
  private readonly calls: ToolCallStream | null;

  constructor(plan: ChatToolPlan) {
    this.calls = plan.format === null ? null : new ToolCallStream(plan.format, plan.maxCalls === undefined ? {} : { maxCalls: plan.maxCalls });
  }

  get callCount(): number {
    return this.calls?.callCount ?? 0;
  }

  /** The deltas for newly generated text; `last` releases whatever the parser held back. */
  push(text: string, last: boolean): Record<string, unknown>[] {
    if (this.calls === null) return text === '' ? [] : [{ content: text }];
    const deltas = text === '' ? [] : this.calls.push(text);
    if (last) deltas.push(...this.calls.finish());
    return deltas.map(wireDelta);
  }
}

function wireDelta(delta: ToolCallDelta): Record<string, unknown> {
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
  ) {
    this.streams = Array.from({ length: choices }, () => new ChatDeltaStream(plan));
  }

  entries(index: number, event: GenerationEvent, logprobs: readonly unknown[]): Record<string, unknown>[] | null {
    const stream = this.streams[index]!;
    const pieces = stream.push(event.text, event.finishReason !== null);
    if (pieces.length === 0 && logprobs.length === 0 && event.finishReason === null) return null;
    if (pieces.length === 0) pieces.push({});
    if (!this.started.has(index)) pieces[0] = { role: 'assistant', content: this.plan.format === null ? '' : null, ...pieces[0] };
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
