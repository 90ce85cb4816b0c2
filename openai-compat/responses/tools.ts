// Responses `tools` of every type. `function` tools are chat's functions in a flat shape;
// `custom` tools are read here in Responses' shape and served as on chat (../custom-tools.ts:
// shown as a function of one string, `input`, their format enforced wherever they are called).
// Hosted tools (web search, file search, code interpreter,
// computer use, image generation, MCP, shells, apply_patch, …) run on OpenAI's side; this server
// runs none, and a request relying on one is refused by its type rather than answered without it
// (OpenAI documents no type a server may skip).

import { invalidArg } from '../../src/errors.js';
import { isObject, type Body } from '../../src/server/kit/body.js';
import { type CustomFormat, type CustomTool, customAsFunction, type ForcedCustomTool, forcedCustom } from '../custom-tools.js';
import { unsupportedParameter } from '../errors.js';

const absent = (v: unknown): boolean => v === undefined || v === null;

export interface ResponsesTools {
  /** Every tool as chat's function tools: custom ones taking one string, `input`. */
  readonly chatTools: Body[];
  /** Custom tools by name: their calls become custom_tool_call items. */
  readonly custom: ReadonlyMap<string, CustomTool>;
  /** The tools as a response object states them. */
  readonly echo: Body[];
}

const FUNCTION_KEYS = ['type', 'name', 'description', 'parameters', 'strict'];
const CUSTOM_KEYS = ['type', 'name', 'description', 'format'];

/** Reads `tools`; each refusal names its field (tools[2].type, tools[0].format.syntax). */
export function readTools(raw: unknown): ResponsesTools {
  if (absent(raw)) return { chatTools: [], custom: new Map(), echo: [] };
  if (!Array.isArray(raw)) throw invalidArg('tools must be an array of tools', 'tools');
  const chatTools: Body[] = [];
  const custom = new Map<string, CustomTool>();
  const echo: Body[] = [];
  raw.forEach((tool: unknown, i) => {
    const at = `tools[${i}]`;
    if (!isObject(tool)) throw invalidArg(`${at} must be an object`, at);
    if (tool.type === 'function') {
      onlyKeys(tool, FUNCTION_KEYS, at);
      const { type, ...fn } = tool;
      chatTools.push({ type, function: fn });
      echo.push(tool);
      return;
    }
    if (tool.type !== 'custom') throw unsupportedParameter(`${at}.type`, `${JSON.stringify(tool.type)} is a hosted tool this server does not run (it serves function and custom tools)`);
    onlyKeys(tool, CUSTOM_KEYS, at);
    if (typeof tool.name !== 'string') throw invalidArg(`${at}.name must be a string`, `${at}.name`);
    if (!absent(tool.description) && typeof tool.description !== 'string') throw invalidArg(`${at}.description must be a string`, `${at}.description`);
    const format = customFormat(tool.format, `${at}.format`);
    const description = typeof tool.description === 'string' ? tool.description : null;
    const read: CustomTool = { name: tool.name, description, format, definitionParam: `${at}.format.definition` };
    custom.set(tool.name, read);
    chatTools.push(customAsFunction(read));
    echo.push({ type: 'custom', name: tool.name, description, format });
  });
  return { chatTools, custom, echo };
}

function onlyKeys(tool: Body, keys: readonly string[], at: string): void {
  for (const key of Object.keys(tool)) if (!keys.includes(key) && !absent(tool[key])) throw unsupportedParameter(`${at}.${key}`);
}

function customFormat(raw: unknown, at: string): CustomFormat {
  if (absent(raw)) return { type: 'text' };
  if (!isObject(raw)) throw invalidArg(`${at} must be an object`, at);
  if (raw.type === 'text') return { type: 'text' };
  if (raw.type !== 'grammar') throw invalidArg(`${at}.type must be "text" or "grammar", got ${JSON.stringify(raw.type)}`, `${at}.type`);
  if (raw.syntax !== 'lark' && raw.syntax !== 'regex') throw invalidArg(`${at}.syntax must be "lark" or "regex", got ${JSON.stringify(raw.syntax)}`, `${at}.syntax`);
  if (typeof raw.definition !== 'string' || raw.definition.length === 0) throw invalidArg(`${at}.definition must be a non-empty string`, `${at}.definition`);
  return { type: 'grammar', syntax: raw.syntax, definition: raw.definition };
}

/**
 * `tool_choice: {type: "custom", name}` for one of the custom tools, or null for any other
 * choice. A Lark construct the engine cannot enforce is a 400 naming the tool's definition.
 */
export function forcedCustomTool(choice: unknown, tools: ResponsesTools): ForcedCustomTool | null {
  if (!isObject(choice) || choice.type !== 'custom') return null;
  const tool = typeof choice.name === 'string' ? tools.custom.get(choice.name) : undefined;
  if (tool === undefined) throw invalidArg(`tool_choice names custom tool ${JSON.stringify(choice.name)}, which is not among the custom tools`, 'tool_choice.name');
  return forcedCustom(tool);
}
