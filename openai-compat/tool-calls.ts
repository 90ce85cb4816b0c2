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
import { AssistantOutputStream, readAssistantOutput, type AssistantDelta, type AssistantOutputPlan } from '../src/assistant-output/index.js';
import { constrainedToolCalls, TOOL_CALL_FORMATS, type ToolCallFormat } from '../src/tool-calls/index.js';
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

/** A model's reasoning reading for one request (LlmModel.reasoningOf); null without a reasoning parser. */
export type ReasoningPlan = AssistantOutputPlan['reasoning'];

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
    throw invalidArg(
      `model '${model.name}' has no tool_call_parser (none set, or auto found no tool-call format in its chat template), so its tool calls cannot be read; tool_choice "auto" needs one (${Object.keys(TOOL_CALL_FORMATS).join(', ')})`,
      'tools',
    );
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
