// Reading a tool-call format's output as a client would: whole (parseToolCalls), or streamed in
// chunks through ToolCallStream with the deltas accumulated as the OpenAI SDK accumulates them.

import type { ParsedToolCall } from '../../src/contracts/tools.js';
import { parseToolCalls, ToolCallStream, type ToolCallDelta, type ToolCallFormat } from '../../src/tool-calls/index.js';

export const ids = () => {
  let n = 0;
  return () => `call_${n++}`;
};

/** What a client ends with after applying every delta (content concatenated; calls by index, arguments concatenated). */
export function accumulate(deltas: readonly ToolCallDelta[]): { content: string | null; calls: ParsedToolCall[] } {
  let content = '';
  const calls: { name: string; arguments: string }[] = [];
  for (const d of deltas) {
    if (d.kind === 'content') content += d.text;
    else if (d.kind === 'call') calls[d.index] = { name: d.name, arguments: '' };
    else calls[d.index]!.arguments += d.text;
  }
  return { content: content === '' ? null : content, calls };
}

export function streamed(format: ToolCallFormat, chunks: readonly string[]) {
  const stream = new ToolCallStream(format, { newId: ids() });
  return accumulate([...chunks.flatMap((c) => stream.push(c)), ...stream.finish()]);
}

export function whole(format: ToolCallFormat, text: string) {
  const parsed = parseToolCalls(format, text, { newId: ids() });
  return { content: parsed.content, calls: parsed.toolCalls.map((c) => c.function) };
}
