// OpenAI's `custom` tools (freeform text input, as Codex sends them), the same on the chat and
// Responses routes whatever shape each spells them in: a custom tool reaches the chat template
// as a function taking one string, `input` (its description followed by its grammar, for the
// model to read), so the model's own call format can call it; its format — free text, a regex,
// or a Lark grammar (translated to the engine's EBNF, lark-grammar.ts) — is enforced by the
// grammar engine wherever it is called: forced (`tool_choice` naming it) the whole output is the
// input; under `required` and `auto` each call's input is held to the format inside the call's
// JSON, beside function calls held to their schemas (withCustomConstraints).

import type { CustomInputGrammar, GrammarSpec } from '../src/contracts/generate.js';
import type { ChatToolPlan } from '../src/server/kit/tool-plan.js';
import type { Body } from '../src/server/kit/body.js';
import { requiredFraming, toolCallsSpec, type ToolCallFormat } from '../src/tool-calls/index.js';
import { unsupportedParameter } from './errors.js';
import { larkToEbnf, UnsupportedLark } from './lark-grammar.js';

/** A custom tool's input format: free text, or text a regex or Lark grammar describes. */
export type CustomFormat = { readonly type: 'text' } | { readonly type: 'grammar'; readonly syntax: 'lark' | 'regex'; readonly definition: string };

export interface CustomTool {
  readonly name: string;
  readonly description: string | null;
  readonly format: CustomFormat;
  /** Where the request spells its grammar's definition, named when it cannot be enforced. */
  readonly definitionParam: string;
}

/** What a custom tool's calls carry as arguments: one string, `input`. */
const INPUT_PARAMETERS = { type: 'object', properties: { input: { type: 'string' } }, required: ['input'], additionalProperties: false };

/** The tool as chat's function tool, for the template and the tool plan. */
export function customAsFunction(tool: CustomTool): Body {
  const shape = tool.format.type === 'text' ? '' : `The input must match this ${tool.format.syntax === 'lark' ? 'Lark grammar' : 'regular expression'}:\n${tool.format.definition}`;
  const description = [tool.description ?? '', shape].filter((s) => s !== '').join('\n\n');
  return { type: 'function', function: { name: tool.name, description, parameters: INPUT_PARAMETERS } };
}

/** A call to a custom tool as the template is shown it: the function call's arguments. */
export const customCallArguments = (input: string): string => JSON.stringify({ input });

/** A call's input from its arguments object (`{"input": …}`), or the arguments as written when they are not one. */
export function customCallInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (typeof parsed === 'object' && parsed !== null && typeof (parsed as { input?: unknown }).input === 'string') return (parsed as { input: string }).input;
  } catch {
    // Not JSON: the model wrote the input bare.
  }
  return args;
}

/** The tool's format for the grammar engine; a Lark construct it cannot enforce is a 400 naming the definition. */
function inputGrammar(tool: CustomTool): CustomInputGrammar {
  const { format } = tool;
  if (format.type === 'text') return { kind: 'text' };
  if (format.syntax === 'regex') return { kind: 'regex', pattern: format.definition };
  try {
    return { kind: 'ebnf', grammar: larkToEbnf(format.definition) };
  } catch (error) {
    if (!(error instanceof UnsupportedLark)) throw error;
    throw unsupportedParameter(
      tool.definitionParam,
      `uses ${error.construct}, which this server cannot enforce (the translated subset of Lark: rules, literals, ranges, regex terminals, groups, [optional], * + ?, ~ n..m)`,
    );
  }
}

/** A forced custom tool: its name and the constraint on the whole output (none for text). */
export interface ForcedCustomTool {
  readonly name: string;
  readonly grammar: GrammarSpec | null;
  /** The field the grammar came from, named when the engine refuses it. */
  readonly param: string;
}

/** The tool forced by a tool_choice: the whole output is its input, its format's grammar as it stands. */
export function forcedCustom(tool: CustomTool): ForcedCustomTool {
  const input = inputGrammar(tool);
  return { name: tool.name, grammar: input.kind === 'text' ? null : input, param: tool.definitionParam };
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

/**
 * Custom tools under tool_choice required or auto (`chatChoice`, chat's spelling; absent is
 * auto): their inputs held to their formats as function calls' arguments are to their schemas.
 * Required: the required array, custom calls among the functions. Auto, where a custom tool has
 * a grammar: the answer's text, then the model's own call blocks, every call in them held to its
 * tool; a model whose call format no grammar can hold is refused, naming the tool's definition,
 * rather than served unconstrained. Any other choice, or no custom tools: the plan as it is.
 */
export function withCustomConstraints(plan: ChatToolPlan, custom: ReadonlyMap<string, CustomTool>, chatChoice: unknown, model: string): ChatToolPlan {
  if (custom.size === 0 || plan.tools === null) return plan;
  const choice = chatChoice ?? 'auto';
  if (choice !== 'required' && choice !== 'auto') return plan;
  const tools = [...custom.values()];
  if (choice === 'auto' && tools.every((tool) => tool.format.type === 'text')) return plan;
  const inputs = new Map(tools.map((tool) => [tool.name, inputGrammar(tool)]));
  if (choice === 'required') {
    const { framing, argumentsKey } = requiredFraming(plan.maxCalls);
    return { ...plan, grammar: toolCallsSpec(plan.tools, inputs, framing, argumentsKey) };
  }
  const blocks = plan.format?.callBlocks;
  if (blocks === undefined) {
    const tool = tools.find((t) => t.format.type !== 'text')!;
    throw unsupportedParameter(
      tool.definitionParam,
      `cannot be enforced under tool_choice "auto" with model '${model}', whose tool-call format (${plan.format?.name}) no grammar here holds; use tool_choice "required" or force the tool`,
    );
  }
  const { argumentsKey, ...framing } = blocks;
  return { ...plan, grammar: toolCallsSpec(plan.tools, inputs, { kind: 'blocks', ...framing, maxCalls: plan.maxCalls ?? null }, argumentsKey) };
}
