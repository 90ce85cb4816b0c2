// The tool-calling fields of a chat request (OpenAI's `tools`, `tool_choice`,
// `parallel_tool_calls`), declared apart from the sampling vocabulary because only chat carries
// them. Every rejection is an INVALID_ARG naming the field as OpenAI's own errors do
// (`tools[0].function.name`), raised before anything is rendered or queued.

import { Ajv } from 'ajv';
import { z } from 'zod';
import type { FunctionTool, ToolChoice, ToolRequest } from '../contracts/tools.js';
import { invalidArg } from '../errors.js';
import { isObject } from './json-object.js';
import { describe } from './rules.js';

/** OpenAI's rule for function names. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
/** OpenAI allows at most 128 tools per request. */
export const MAX_TOOLS = 128;

const functionSchema = z.object({
  name: z
    .string({ error: 'must be a string' })
    .regex(TOOL_NAME_PATTERN, { error: (iss) => `must match ${TOOL_NAME_PATTERN.source} (letters, digits, _ and -, at most 64), got ${describe(iss.input)}` }),
  description: z.string({ error: 'must be a string' }).nullish(),
  parameters: z.custom<Record<string, unknown>>(isObject, { error: 'must be a JSON Schema object' }).nullish(),
  strict: z.boolean({ error: 'must be a boolean' }).nullish(),
});

const toolSchema = z.object({
  type: z.literal('function', { error: 'must be "function" (the only tool type this server supports)' }),
  function: z.custom<unknown>(isObject, { error: 'must be an object' }).pipe(functionSchema),
});

/** The tool fields as a chat body carries them, unchecked. */
export interface UncheckedToolFields {
  readonly tools?: unknown;
  readonly tool_choice?: unknown;
  readonly parallel_tool_calls?: unknown;
}

/** Checks the tool fields; without tools, tool_choice may only be none or auto. */
export function parseToolRequest(body: UncheckedToolFields): ToolRequest {
  const tools = parseTools(body.tools);
  const choice = parseToolChoice(body.tool_choice, tools);
  const parallel = body.parallel_tool_calls ?? true;
  if (typeof parallel !== 'boolean') throw invalidArg(`parallel_tool_calls must be a boolean, got ${describe(parallel)}`, 'parallel_tool_calls');
  return { tools, choice, parallelToolCalls: parallel };
}

function parseTools(raw: unknown): FunctionTool[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw invalidArg('tools must be an array of tools', 'tools');
  if (raw.length > MAX_TOOLS) throw invalidArg(`tools has ${raw.length} entries; at most ${MAX_TOOLS} are allowed`, 'tools');
  const seen = new Set<string>();
  return raw.map((entry: unknown, i) => {
    const tool = checkTool(entry, `tools[${i}]`);
    const { name } = tool.function;
    if (seen.has(name)) throw invalidArg(`tools[${i}].function.name: the function name '${name}' is given more than once`, `tools[${i}].function.name`);
    seen.add(name);
    return tool;
  });
}

function checkTool(entry: unknown, at: string): FunctionTool {
  if (!isObject(entry)) throw invalidArg(`${at} must be an object`, at);
  const result = toolSchema.safeParse(entry);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const param = [at, ...issue.path.map(String)].join('.');
    throw invalidArg(`${param} ${issue.message}`, param);
  }
  const { name, description, parameters, strict } = result.data.function;
  // A function without parameters takes none (OpenAI's reading of an absent schema).
  const schema = parameters ?? { type: 'object', properties: {} };
  checkParameterSchema(schema, `${at}.function.parameters`);
  return {
    type: 'function',
    function: { name, ...(description != null ? { description } : {}), parameters: schema, ...(strict != null ? { strict } : {}) },
  };
}

/** The parameters must compile as a JSON Schema describing an object; a fresh compiler so nothing is cached across requests. */
function checkParameterSchema(schema: Record<string, unknown>, param: string): void {
  if (schema.type !== undefined && schema.type !== 'object') throw invalidArg(`${param} must describe an object (type "object"), got type ${describe(schema.type)}`, param);
  try {
    new Ajv({ strict: false, validateFormats: false, allErrors: false }).compile(schema);
  } catch (error) {
    throw invalidArg(`${param} is not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`, param);
  }
}

function parseToolChoice(raw: unknown, tools: readonly FunctionTool[]): ToolChoice {
  if (raw === undefined || raw === null) return { kind: tools.length > 0 ? 'auto' : 'none' };
  if (raw === 'none' || raw === 'auto') return { kind: raw };
  if (raw === 'required') {
    if (tools.length === 0) throw invalidArg('tool_choice "required" needs at least one tool in tools', 'tool_choice');
    return { kind: 'required' };
  }
  const named = isObject(raw) && raw.type === 'function' && isObject(raw.function) ? raw.function.name : undefined;
  if (typeof named !== 'string') throw invalidArg('tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}', 'tool_choice');
  if (!tools.some((t) => t.function.name === named)) {
    const offered = tools.length === 0 ? 'no tools were given' : `the tools are ${tools.map((t) => `'${t.function.name}'`).join(', ')}`;
    throw invalidArg(`tool_choice names the function '${named}', which is not in tools (${offered})`, 'tool_choice');
  }
  return { kind: 'function', name: named };
}
