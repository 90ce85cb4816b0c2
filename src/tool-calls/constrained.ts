// tool_choice "required" and a named function, as vLLM serves them: generation is constrained
// by the engine's grammar rather than the model's own call format, so the output is always
// well-formed and its arguments valid under the function's schema:
//   named f  → the output is f's arguments object itself (a json_schema spec: f's parameters);
//   required → a JSON array of at least one (at most one without parallel_tool_calls)
//              {"name": <one of the tools>, "parameters": <that tool's arguments>} (a tool_calls
//              spec: each function's parameters translated where its $refs resolve, held by the
//              string guard like a response_format schema).
// Each comes with the format that reads the constrained output back into calls.

import type { CustomInputGrammar, GrammarSpec, ToolCallsFraming } from '../contracts/generate.js';
import type { FunctionTool, ParsedToolCall, ToolRequest } from '../contracts/tools.js';
import { parseCallArray, type ToolCallFormat } from './formats.js';
import { callHead, skipWhitespace } from './json-scan.js';
import { canonicalSchemaJson } from '../vocabulary/canonical-json.js';

export interface ConstrainedToolCalls {
  readonly grammar: GrammarSpec;
  /** Reads the constrained output back into calls (whole or streaming). */
  readonly format: ToolCallFormat;
}

/** The grammar and reader for tool_choice required or named; null when the model chooses freely. */
export function constrainedToolCalls(request: ToolRequest): ConstrainedToolCalls | null {
  const { choice, tools } = request;
  if (choice.kind === 'function') {
    const parameters = tools.find((t) => t.function.name === choice.name)!.function.parameters;
    return { grammar: { kind: 'json_schema', schema: canonicalSchemaJson(parameters) }, format: namedFormat(choice.name) };
  }
  if (choice.kind !== 'required') return null;
  const { framing, argumentsKey } = requiredFraming(request.parallelToolCalls ? undefined : 1);
  return { grammar: toolCallsSpec(tools, new Map(), framing, argumentsKey), format: REQUIRED_FORMAT };
}

/** The output is the named function's arguments. */
function namedFormat(name: string): ToolCallFormat {
  return {
    name: `named:${name}`,
    needsSpecialTokens: false,
    parse: (text) => ({ content: '', calls: [{ name, arguments: text.trimStart() }] satisfies ParsedToolCall[] }),
  };
}

const NAME_PARAMETERS = callHead(['parameters']);

/** The output is `[{"name", "parameters"}, …]`. */
const REQUIRED_FORMAT: ToolCallFormat = {
  name: 'required',
  needsSpecialTokens: false,
  parse(text, final) {
    const open = skipWhitespace(text, 0);
    if (text[open] !== '[') return { content: '', calls: [] };
    return { content: '', calls: parseCallArray(text, open + 1, NAME_PARAMETERS, ['parameters'], final).calls };
  },
};

/**
 * Calls to function and custom tools as one constraint (a custom tool offered as a function of
 * one string, `input`, whose input format is in `inputs`; the rest are functions, held to their
 * parameters): under tool_choice required the required array (requiredFraming), under auto the
 * model's own call blocks after free text (its format's CallBlocks).
 */
export function toolCallsSpec(tools: readonly FunctionTool[], inputs: ReadonlyMap<string, CustomInputGrammar>, framing: ToolCallsFraming, argumentsKey: string): GrammarSpec {
  return {
    kind: 'tool_calls',
    calls: {
      framing,
      argumentsKey,
      tools: tools.map(({ function: { name, parameters } }) => {
        const input = inputs.get(name);
        // The schema's own key order: arguments are written in the order the tool lists them.
        return input === undefined ? { kind: 'function', name, parameters: JSON.stringify(parameters) } : { kind: 'custom', name, input };
      }),
    },
  };
}

/** The required array's framing and key (REQUIRED_FORMAT reads it back). */
export const requiredFraming = (maxCalls: number | undefined): { framing: ToolCallsFraming; argumentsKey: string } => ({
  framing: { kind: 'array', maxCalls: maxCalls ?? null },
  argumentsKey: 'parameters',
});
