// The tool-call parsers by their --tool-call-parser names (vLLM's where vLLM has one), and
// `auto`: the parser a model's chat template asks for, read from the template's own text.

import { deepseekV3 } from './deepseek.js';
import { hermes, llama3Json, mistral } from './formats.js';
import { pythonic, toolCode } from './pythonic.js';

export const TOOL_CALL_FORMATS = { hermes, llama3_json: llama3Json, mistral, pythonic, tool_code: toolCode, deepseek_v3: deepseekV3 } as const;
export type ToolCallParserName = keyof typeof TOOL_CALL_FORMATS;

export const isToolCallParserName = (name: string): name is ToolCallParserName => Object.hasOwn(TOOL_CALL_FORMATS, name);

/**
 * What a template shows the model of its calls, first match wins: Qwen's `<tool_call>` (hermes),
 * DeepSeek's call markers, Mistral's `[TOOL_CALLS]`, the pythonic instruction of Llama 3.2 / 4
 * templates (`[func_name1(params_name1=params_value1, …)]`, before Llama's JSON since those
 * templates may mention both), Llama 3.1's `<|python_tag|>` or `"parameters"`, Gemma's tool_code.
 */
const TEMPLATE_SIGNS: readonly (readonly [RegExp, ToolCallParserName])[] = [
  [/<tool_call>/, 'hermes'],
  [/<｜tool▁calls?▁begin｜>/, 'deepseek_v3'],
  [/\[TOOL_CALLS\]/, 'mistral'],
  [/\[func_name\d*\(/, 'pythonic'],
  [/<\|python_tag\|>|"parameters"/, 'llama3_json'],
  [/tool_code/, 'tool_code'],
];

/** --tool-call-parser auto: the parser `template` asks for; null when it shows no call format (then tool_choice auto is refused). */
export function detectToolCallParser(template: string | null): ToolCallParserName | null {
  if (template === null) return null;
  return TEMPLATE_SIGNS.find(([sign]) => sign.test(template))?.[1] ?? null;
}
