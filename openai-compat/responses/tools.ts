// Responses `tools` of every type. `function` tools are chat's functions in a flat shape.
// `custom` tools (freeform text input, OpenAI's and Codex's) reach the chat template as a
// function taking one string, `input`, so a model's own call format can call them under `auto`;
// under a forced `tool_choice: {type: "custom", name}` the whole output is the input, with the
// tool's format enforced by the grammar engine (`regex` as is, `lark` translated to its EBNF,
// lark-grammar.ts; `text` free); under `required` and `auto` each call's input is held to the
// same format inside the call's JSON (withCustomConstraints). Hosted tools (web search, file search, code interpreter,
// computer use, image generation, MCP, shells, apply_patch, …) run on OpenAI's side; this server
// runs none, and a request relying on one is refused by its type rather than answered without it
// (OpenAI documents no type a server may skip).

import type { CustomInputGrammar, GrammarSpec } from '../../src/contracts/generate.js';
import type { ChatToolPlan } from '../../src/server/kit/tool-plan.js';
import { requiredFraming, toolCallsSpec, type ToolCallFormat } from '../../src/tool-calls/index.js';
import { invalidArg } from '../../src/errors.js';
import { isObject, type Body } from '../../src/server/kit/body.js';
import { unsupportedParameter } from '../errors.js';
import { larkToEbnf, UnsupportedLark } from './lark-grammar.js';

const absent = (v: unknown): boolean => v === undefined || v === null;

/** A custom tool's input format: free text, or text a grammar constrains when the call is forced. */
export type CustomFormat = { readonly type: 'text' } | { readonly type: 'grammar'; readonly syntax: 'lark' | 'regex'; readonly definition: string };

export interface CustomTool {
  readonly name: string;
  readonly description: string | null;
  readonly format: CustomFormat;
}

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
    custom.set(tool.name, { name: tool.name, description, format });
    chatTools.push({ type: 'function', function: { name: tool.name, description: describeCustom(description, format), parameters: INPUT_PARAMETERS } });
    echo.push({ type: 'custom', name: tool.name, description, format });
  });
  return { chatTools, custom, echo };
}

/** What a custom tool is shown to the model as: one string argument. */
const INPUT_PARAMETERS = { type: 'object', properties: { input: { type: 'string' } }, required: ['input'], additionalProperties: false };

/** The tool's description, and the grammar its input follows, for the model to read. */
function describeCustom(description: string | null, format: CustomFormat): string {
  const shape = format.type === 'text' ? '' : `The input must match this ${format.syntax === 'lark' ? 'Lark grammar' : 'regular expression'}:\n${format.definition}`;
  return [description ?? '', shape].filter((s) => s !== '').join('\n\n');
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

/** A forced custom tool: its name and the constraint on the whole output (none for text). */
export interface ForcedCustomTool {
  readonly name: string;
  readonly grammar: GrammarSpec | null;
  /** The field the grammar came from, named when the engine refuses it. */
  readonly param: string;
}

/**
 * `tool_choice: {type: "custom", name}` for one of the custom tools, or null for any other
 * choice. A Lark construct the engine cannot enforce is a 400 naming the tool's definition.
 */
export function forcedCustomTool(choice: unknown, tools: ResponsesTools, rawTools: unknown): ForcedCustomTool | null {
  if (!isObject(choice) || choice.type !== 'custom') return null;
  const tool = typeof choice.name === 'string' ? tools.custom.get(choice.name) : undefined;
  if (tool === undefined) throw invalidArg(`tool_choice names custom tool ${JSON.stringify(choice.name)}, which is not among the custom tools`, 'tool_choice.name');
  const param = definitionParam(tool.name, rawTools);
  const input = inputGrammar(tool, rawTools);
  // The whole output is the input: its format's grammar as it stands.
  const grammar: GrammarSpec | null = input.kind === 'text' ? null : input;
  return { name: tool.name, grammar, param };
}

/** Where a custom tool's definition sits in the request (names are unique: the chat tools' check refuses a repeat). */
function definitionParam(name: string, rawTools: unknown): string {
  const index = Array.isArray(rawTools) ? rawTools.findIndex((t: unknown) => isObject(t) && t.type === 'custom' && t.name === name) : -1;
  return `tools[${index}].format.definition`;
}

/** A custom tool's input format for the grammar engine: Lark translated to its EBNF; a construct it cannot enforce is a 400 naming the definition. */
function inputGrammar(tool: CustomTool, rawTools: unknown): CustomInputGrammar {
  const { format } = tool;
  if (format.type === 'text') return { kind: 'text' };
  if (format.syntax === 'regex') return { kind: 'regex', pattern: format.definition };
  try {
    return { kind: 'ebnf', grammar: larkToEbnf(format.definition) };
  } catch (error) {
    if (!(error instanceof UnsupportedLark)) throw error;
    throw unsupportedParameter(
      definitionParam(tool.name, rawTools),
      `uses ${error.construct}, which this server cannot enforce (the translated subset of Lark: rules, literals, ranges, regex terminals, groups, [optional], * + ?, ~ n..m)`,
    );
  }
}

/**
 * Custom tools under tool_choice required or auto: their inputs held to their formats as
 * function calls' arguments are to their schemas. Required: the required array, with custom
 * calls among the functions. Auto (with a custom tool that has a grammar): the answer's text,
 * then the model's own call blocks, every call in them held to its tool; a model whose call
 * format no grammar can hold is refused, naming the tool, rather than served unconstrained.
 * Any other choice, or no custom tools: the plan as it is.
 */
export function withCustomConstraints(plan: ChatToolPlan, tools: ResponsesTools, chatChoice: unknown, rawTools: unknown, model: string): ChatToolPlan {
  if (tools.custom.size === 0 || plan.tools === null) return plan;
  const choice = chatChoice ?? 'auto';
  if (choice !== 'required' && choice !== 'auto') return plan;
  const custom = [...tools.custom.values()];
  if (choice === 'auto' && custom.every((tool) => tool.format.type === 'text')) return plan;
  const inputs = new Map(custom.map((tool) => [tool.name, inputGrammar(tool, rawTools)]));
  if (choice === 'required') {
    const { framing, argumentsKey } = requiredFraming(plan.maxCalls);
    return { ...plan, grammar: toolCallsSpec(plan.tools, inputs, framing, argumentsKey) };
  }
  const blocks = plan.format?.callBlocks;
  if (blocks === undefined) {
    const tool = custom.find((t) => t.format.type !== 'text')!;
    throw unsupportedParameter(
      definitionParam(tool.name, rawTools),
      `cannot be enforced under tool_choice "auto" with model '${model}', whose tool-call format (${plan.format?.name}) no grammar here holds; use tool_choice "required" or {"type": "custom", "name": ${JSON.stringify(tool.name)}}`,
    );
  }
  const { argumentsKey, ...framing } = blocks;
  return { ...plan, grammar: toolCallsSpec(plan.tools, inputs, { kind: 'blocks', ...framing, maxCalls: plan.maxCalls ?? null }, argumentsKey) };
}

/** The output read as one call to the forced custom tool, its whole text the input, exactly as written. */
function customInputFormat(name: string): ToolCallFormat {
  return { name: `custom:${name}`, needsSpecialTokens: false, parse: (text) => ({ content: '', calls: [{ name, arguments: text }] }) };
}

/** The chat tool plan, with a forced custom tool's reading and constraint in place of the model's own call format. */
export function withForcedCustom(plan: ChatToolPlan, forced: ForcedCustomTool | null): ChatToolPlan {
  if (forced === null) return plan;
  const { grammar: _, ...shown } = plan;
  return { ...shown, format: customInputFormat(forced.name), maxCalls: 1, ...(forced.grammar ? { grammar: forced.grammar } : {}) };
}
