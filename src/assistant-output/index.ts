// One choice's generated text read as an assistant turn, for every front end (OpenAI chat,
// Responses, Anthropic Messages): reasoning first (the model's reasoning parser), then the tool
// calls of the answer part only (the model's tool-call parser, or the constrained format of a
// forced tool_choice), the rest being content. The whole-text reading and the streaming one agree
// on any chunking of the same text. See README.md.

import { ReasoningStream, splitReasoning, type ReasoningPlan } from '../reasoning/index.js';
import { parseToolCalls, ToolCallStream, type ToolCall, type ToolCallDelta, type ToolCallFormat } from '../tool-calls/index.js';

export interface AssistantOutputPlan {
  /** How the output's thinking block is read; null: the model has no reasoning parser. */
  readonly reasoning: ReasoningPlan | null;
  /** How the answer's tool calls are read; null: the answer is all content. */
  readonly toolCalls: ToolCallFormat | null;
  /** At most this many calls are kept (1 for parallel_tool_calls false). */
  readonly maxCalls?: number | undefined;
  /** Call ids; default `call_` + 24 random alphanumerics. */
  readonly newId?: () => string;
}

export interface AssistantOutput {
  /** The thinking text; null when there was none. */
  readonly reasoning: string | null;
  /** The answer text outside tool calls; null when there is none. */
  readonly content: string | null;
  readonly toolCalls: readonly ToolCall[];
}

/** A streamed piece, in order: reasoning text, or one of the answer's pieces (content, a call's opening, its arguments). */
export type AssistantDelta = { readonly kind: 'reasoning'; readonly text: string } | ToolCallDelta;

const orNull = (text: string): string | null => (text === '' ? null : text);

function callOptions(plan: AssistantOutputPlan) {
  return { ...(plan.maxCalls === undefined ? {} : { maxCalls: plan.maxCalls }), ...(plan.newId ? { newId: plan.newId } : {}) };
}

/** A finished choice's text, read once. */
export function readAssistantOutput(plan: AssistantOutputPlan, text: string): AssistantOutput {
  const { reasoning, content: answer } = plan.reasoning === null ? { reasoning: '', content: text } : splitReasoning(plan.reasoning, text);
  if (plan.toolCalls === null) return { reasoning: orNull(reasoning), content: orNull(answer), toolCalls: [] };
  const parsed = parseToolCalls(plan.toolCalls, answer, callOptions(plan));
  return { reasoning: orNull(reasoning), content: parsed.content, toolCalls: parsed.toolCalls };
}

/** One choice's text as it streams: push each new piece, then finish once the output ended. */
export class AssistantOutputStream {
  private readonly reasoning: ReasoningStream | null;
  private readonly calls: ToolCallStream | null;

  constructor(plan: AssistantOutputPlan) {
    this.reasoning = plan.reasoning === null ? null : new ReasoningStream(plan.reasoning);
    this.calls = plan.toolCalls === null ? null : new ToolCallStream(plan.toolCalls, callOptions(plan));
  }

  /** Tool calls opened so far. */
  get toolCallCount(): number {
    return this.calls?.callCount ?? 0;
  }

  push(text: string): AssistantDelta[] {
    if (text === '') return [];
    return this.route(this.reasoning === null ? { reasoning: '', content: text } : this.reasoning.push(text), false);
  }

  /** The end of the output: everything held back is released. */
  finish(): AssistantDelta[] {
    return this.route(this.reasoning === null ? { reasoning: '', content: '' } : this.reasoning.finish(), true);
  }

  private route(split: { readonly reasoning: string; readonly content: string }, final: boolean): AssistantDelta[] {
    const out: AssistantDelta[] = split.reasoning === '' ? [] : [{ kind: 'reasoning', text: split.reasoning }];
    if (this.calls === null) {
      if (split.content !== '') out.push({ kind: 'content', text: split.content });
      return out;
    }
    if (split.content !== '') out.push(...this.calls.push(split.content));
    if (final) out.push(...this.calls.finish());
    return out;
  }
}
