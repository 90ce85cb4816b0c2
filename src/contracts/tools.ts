// Tool (function) calling as plain data: the functions a chat request offers, how the model may
// use them, and the calls parsed out of its output. The vocabulary checks and produces these
// (src/vocabulary/tools.ts); the chat template, the tool-call parsers and the OpenAI routes read them.

/** One function the model may call; `parameters` is a JSON Schema object (already compiled once). */
export interface FunctionTool {
  readonly type: 'function';
  readonly function: {
    readonly name: string;
    readonly description?: string;
    readonly parameters: Readonly<Record<string, unknown>>;
    readonly strict?: boolean;
  };
}

/** OpenAI's tool_choice: no calls, the model decides, at least one call, or this function. */
export type ToolChoice = { readonly kind: 'none' } | { readonly kind: 'auto' } | { readonly kind: 'required' } | { readonly kind: 'function'; readonly name: string };

export interface ToolRequest {
  readonly tools: readonly FunctionTool[];
  readonly choice: ToolChoice;
  /** False: at most one call per turn. */
  readonly parallelToolCalls: boolean;
}

/** A call as the model wrote it: `arguments` is the JSON text of its arguments, verbatim. */
export interface ParsedToolCall {
  readonly name: string;
  readonly arguments: string;
}
