// Anthropic's `tools` ({name, description, input_schema}) and `tool_choice` ({type: auto | any |
// tool | none, name, disable_parallel_tool_use}) served by the OpenAI route's tool plan: the
// same template rendering, the model's tool_call_parser under auto, and the engine's grammar
// under any (OpenAI's required) and tool (a named function), so every call a constrained
// request makes is valid under its input_schema. The checks of the shared vocabulary name
// fields in OpenAI's spelling; a refusal is re-spelled in Anthropic's (`tools.0.input_schema`).

import { ConveyorError, invalidArg } from '../src/errors.js';
import type { LlmModel } from '../src/serving/llm-backend.js';
import { chatToolPlan, type ChatToolPlan } from '../src/server/kit/tool-plan.js';
import { isObject, type Body } from '../src/server/kit/body.js';

/** Server tools (web search, code execution, …) run at Anthropic; only client tools can be served here. */
function openaiTool(tool: unknown, i: number): Body {
  const at = `tools.${i}`;
  if (!isObject(tool)) throw invalidArg(`${at} must be an object`, at);
  if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') {
    throw invalidArg(`${at}.type: tools of type ${JSON.stringify(tool.type)} are not supported by this server (only client tools with an input_schema)`, `${at}.type`);
  }
  if (!isObject(tool.input_schema)) throw invalidArg(`${at}.input_schema must be a JSON Schema object`, `${at}.input_schema`);
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.input_schema } };
}

function openaiToolChoice(choice: unknown, toolCount: number): { tool_choice?: unknown; parallel_tool_calls?: unknown } {
  if (choice === undefined || choice === null) return {};
  if (!isObject(choice)) throw invalidArg('tool_choice must be an object with a type (auto, any, tool or none)', 'tool_choice');
  const parallel = choice.disable_parallel_tool_use;
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean')
    throw invalidArg('tool_choice.disable_parallel_tool_use must be a boolean', 'tool_choice.disable_parallel_tool_use');
  const parallelToolCalls = parallel === true ? { parallel_tool_calls: false } : {};
  if ((choice.type === 'any' || choice.type === 'tool') && toolCount === 0) throw invalidArg(`tool_choice.type "${choice.type}" needs at least one tool in tools`, 'tool_choice');
  switch (choice.type) {
    case 'auto':
    case 'none':
      return { tool_choice: choice.type, ...parallelToolCalls };
    case 'any':
      return { tool_choice: 'required', ...parallelToolCalls };
    case 'tool':
      if (typeof choice.name !== 'string') throw invalidArg('tool_choice.name must be the name of one of the tools', 'tool_choice.name');
      return { tool_choice: { type: 'function', function: { name: choice.name } }, ...parallelToolCalls };
    default:
      throw invalidArg(`tool_choice.type must be "auto", "any", "tool" or "none", got ${JSON.stringify(choice.type)}`, 'tool_choice.type');
  }
}

/** OpenAI's names for a tool's parts → Anthropic's. */
function anthropicSpelling(text: string): string {
  return text.replace(/tools\[(\d+)\]\.function\.parameters/g, 'tools.$1.input_schema').replace(/tools\[(\d+)\]\.function\./g, 'tools.$1.');
}

/** The tool plan for an Anthropic request; without tools, the output is all text. */
export function messagesToolPlan(body: Body, model: LlmModel): ChatToolPlan {
  const raw = body.tools;
  if (raw !== undefined && raw !== null && !Array.isArray(raw)) throw invalidArg('tools must be an array of tools', 'tools');
  const tools = (raw ?? []).map(openaiTool);
  const fields = { tools: tools.length > 0 ? tools : undefined, ...openaiToolChoice(body.tool_choice, tools.length) };
  try {
    return chatToolPlan(fields, model);
  } catch (error) {
    if (!(error instanceof ConveyorError)) throw error;
    throw new ConveyorError(error.code, anthropicSpelling(error.message), error.param === undefined ? undefined : anthropicSpelling(error.param));
  }
}
