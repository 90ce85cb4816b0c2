// Chat's tools with OpenAI's `custom` tools among them (custom-tools.ts serves them): a custom
// tool `{type: "custom", custom: {name, description?, format?}}` (format `{type: "text"}` or
// `{type: "grammar", grammar: {syntax: "lark" | "regex", definition}}`) is shown to the template
// as its function, `tool_choice: {type: "custom", custom: {name}}` forces it (the whole output is
// its input), and an assistant message's custom call `{id, type: "custom", custom: {name,
// input}}` is shown as that function's call. The answer's calls to custom tools are written back
// as `{id, type: "custom", custom: {name, input}}` (tool-calls.ts). The rest of the body is chat's
// tool plan as for function tools alone.

import type { LlmModel } from '../src/serving/llm-backend.js';
import { invalidArg } from '../src/errors.js';
import { isObject, type Body } from '../src/server/kit/body.js';
import { chatToolPlan, type ChatToolPlan } from '../src/server/kit/tool-plan.js';
import { type CustomFormat, type CustomTool, customAsFunction, customCallArguments, forcedCustom, withCustomConstraints, withForcedCustom } from './custom-tools.js';
import { unsupportedParameter } from './errors.js';

/** How a chat request's calls to custom tools are written back. */
export interface CustomCalls {
  /** The custom tools' names: their calls are written as custom calls. */
  readonly names: ReadonlySet<string>;
  /** True when a custom tool is forced: a call's arguments are its input as written, not `{"input": …}`. */
  readonly rawInput: boolean;
}

export const NO_CUSTOM_CALLS: CustomCalls = { names: new Set(), rawInput: false };

export interface ChatTools {
  /** The body as chat's tool plan and template read it: custom tools, choices and calls in function shape. */
  readonly body: Body;
  readonly plan: ChatToolPlan;
  readonly custom: CustomCalls;
  /** The field a refusal of the plan's grammar names. */
  readonly grammarParam: string;
}

const absent = (v: unknown): boolean => v === undefined || v === null;

/** Reads the body's tools (custom ones included, each refusal naming its field) and decides how the output is read and constrained. */
export function chatTools(body: Body, model: LlmModel, requested: string): ChatTools {
  const custom = readCustomTools(body.tools);
  const messages = withCustomCallsAsFunctions(body.messages);
  if (custom.size === 0 && messages === body.messages) return { body, plan: chatToolPlan(body, model), custom: NO_CUSTOM_CALLS, grammarParam: 'tool_choice' };
  const forced = forcedTool(body.tool_choice, custom);
  const tools = (body.tools as unknown[]).map((tool) => (isObject(tool) && tool.type === 'custom' ? customAsFunction(custom.get((tool.custom as Body).name as string)!) : tool));
  // A forced custom tool is no chat tool_choice: the tools are shown, the output is read as its input.
  const shown: Body = { ...body, messages, ...(custom.size > 0 ? { tools } : {}), ...(forced ? { tool_choice: 'none' } : {}) };
  const plan = withForcedCustom(withCustomConstraints(chatToolPlan(shown, model), custom, shown.tool_choice, requested), forced);
  const grammarParam = forced?.param ?? (plan.grammar?.kind === 'tool_calls' ? 'tools' : 'tool_choice');
  return { body: shown, plan, custom: { names: new Set(custom.keys()), rawInput: forced !== null }, grammarParam };
}

/** The custom tools among `tools`, by name. */
function readCustomTools(raw: unknown): Map<string, CustomTool> {
  const custom = new Map<string, CustomTool>();
  if (!Array.isArray(raw)) return custom;
  raw.forEach((tool: unknown, i) => {
    if (!isObject(tool) || tool.type !== 'custom') return;
    const at = `tools[${i}].custom`;
    for (const key of Object.keys(tool)) if (key !== 'type' && key !== 'custom') throw unsupportedParameter(`tools[${i}].${key}`);
    const spec = tool.custom;
    if (!isObject(spec)) throw invalidArg(`${at} must be an object`, at);
    for (const key of Object.keys(spec)) if (!['name', 'description', 'format'].includes(key) && !absent(spec[key])) throw unsupportedParameter(`${at}.${key}`);
    if (typeof spec.name !== 'string' || spec.name === '') throw invalidArg(`${at}.name must be a non-empty string`, `${at}.name`);
    if (!absent(spec.description) && typeof spec.description !== 'string') throw invalidArg(`${at}.description must be a string`, `${at}.description`);
    if (custom.has(spec.name)) throw invalidArg(`${at}.name ${JSON.stringify(spec.name)} names a tool twice`, `${at}.name`);
    const description = typeof spec.description === 'string' ? spec.description : null;
    custom.set(spec.name, { name: spec.name, description, format: customFormat(spec.format, `${at}.format`), definitionParam: `${at}.format.grammar.definition` });
  });
  return custom;
}

function customFormat(raw: unknown, at: string): CustomFormat {
  if (absent(raw)) return { type: 'text' };
  if (!isObject(raw)) throw invalidArg(`${at} must be an object`, at);
  if (raw.type === 'text') return { type: 'text' };
  if (raw.type !== 'grammar') throw invalidArg(`${at}.type must be "text" or "grammar", got ${JSON.stringify(raw.type)}`, `${at}.type`);
  const grammar = raw.grammar;
  if (!isObject(grammar)) throw invalidArg(`${at}.grammar must be an object with syntax and definition`, `${at}.grammar`);
  if (grammar.syntax !== 'lark' && grammar.syntax !== 'regex') throw invalidArg(`${at}.grammar.syntax must be "lark" or "regex", got ${JSON.stringify(grammar.syntax)}`, `${at}.grammar.syntax`);
  if (typeof grammar.definition !== 'string' || grammar.definition.length === 0) throw invalidArg(`${at}.grammar.definition must be a non-empty string`, `${at}.grammar.definition`);
  return { type: 'grammar', syntax: grammar.syntax, definition: grammar.definition };
}

/** `tool_choice: {type: "custom", custom: {name}}` for one of the custom tools, or null for any other choice. */
function forcedTool(choice: unknown, custom: ReadonlyMap<string, CustomTool>) {
  if (!isObject(choice) || choice.type !== 'custom') return null;
  const name = isObject(choice.custom) ? choice.custom.name : undefined;
  const tool = typeof name === 'string' ? custom.get(name) : undefined;
  if (tool === undefined) throw invalidArg(`tool_choice names custom tool ${JSON.stringify(name)}, which is not among the custom tools`, 'tool_choice.custom.name');
  return forcedCustom(tool);
}

/** The messages with assistant calls to custom tools as calls to the functions they are shown as; the same array when there are none. */
function withCustomCallsAsFunctions(messages: unknown): unknown {
  if (!Array.isArray(messages)) return messages;
  const hasCustom = (m: unknown): boolean => isObject(m) && Array.isArray(m.tool_calls) && m.tool_calls.some((c: unknown) => isObject(c) && c.type === 'custom');
  if (!messages.some(hasCustom)) return messages;
  return messages.map((message: unknown, i) => {
    if (!hasCustom(message)) return message;
    const m = message as Body;
    const calls = (m.tool_calls as unknown[]).map((call: unknown, j) => {
      if (!isObject(call) || call.type !== 'custom') return call;
      const at = `messages[${i}].tool_calls[${j}].custom`;
      const spec = call.custom;
      if (!isObject(spec) || typeof spec.name !== 'string' || typeof spec.input !== 'string') throw invalidArg(`${at} must be an object with a string name and input`, at);
      return { id: call.id, type: 'function', function: { name: spec.name, arguments: customCallArguments(spec.input) } };
    });
    return { ...m, tool_calls: calls };
  });
}
