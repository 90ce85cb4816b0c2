// A chat request's tool plan, shared by every front end that serves tools (OpenAI's chat and
// Responses, Anthropic's Messages): which tools reach the chat template, and how the output is
// read for calls (the model's tool_call_parser under tool_choice auto; the constraint's own
// format under required or a named function; nothing under none). The fields are read in
// OpenAI's spelling (src/vocabulary's tool request); a protocol with other names maps its own
// onto them first. How a call is written back is each protocol's.

import type { GrammarSpec } from '../../contracts/generate.js';
import type { FunctionTool, ToolRequest } from '../../contracts/tools.js';
import { invalidArg } from '../../errors.js';
import type { LlmModel } from '../../serving/llm-backend.js';
import type { AssistantOutputPlan } from '../../assistant-output/index.js';
import { TOOL_CALL_FORMATS, constrainedToolCalls, type ToolCallFormat } from '../../tool-calls/index.js';
import { parseToolRequest } from '../../vocabulary/index.js';
import type { Body } from './body.js';

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
