// How a response's generated text is read into output parts as it streams: through the tool
// plan's call format (the model's tool_call_parser, or the constraint's format under tool_choice
// required / named) when tools are read, else all of it as content.

import { ToolCallStream } from '../../src/tool-calls/index.js';
import type { ChatToolPlan } from '../tool-calls.js';
import type { OutputPart } from './output-events.js';

export interface OutputReader {
  /** The parts newly generated text adds; `last` releases whatever was held back. */
  push(text: string, last: boolean): OutputPart[];
}

export function outputReader(plan: ChatToolPlan): OutputReader {
  if (plan.format === null) return { push: (text) => (text === '' ? [] : [{ kind: 'content', text }]) };
  const calls = new ToolCallStream(plan.format, plan.maxCalls === undefined ? {} : { maxCalls: plan.maxCalls });
  return {
    push(text, last) {
      const parts: OutputPart[] = text === '' ? [] : calls.push(text);
      if (last) parts.push(...calls.finish());
      return parts;
    },
  };
}
