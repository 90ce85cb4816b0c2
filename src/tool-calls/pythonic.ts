// The tool-call formats written in Python call syntax: Llama 3.2's pythonic list (vLLM's
// `pythonic` parser) and Gemma's ```tool_code blocks (Google's Gemma function-calling guide).
// A call is sent once its closing `)` is read, its arguments whole: a call that turns out
// malformed is then still text, never a call sent by half.

import type { ParsedToolCall } from '../contracts/tools.js';
import { output, scanBlocks, type ToolCallFormat } from './formats.js';
import { callFromJson, parseJson, skipWhitespace } from './json-scan.js';
import { readPythonCall } from './python-calls.js';

type ListRead = { readonly calls: ParsedToolCall[]; readonly state: 'closed' | 'incomplete' | 'malformed'; readonly stop: number };

/** A list of calls from `pos` (just inside its `[`); `stop` is after the `]`, or after the last call read. */
function readCallList(text: string, pos: number): ListRead {
  const calls: ParsedToolCall[] = [];
  let stop = pos;
  while (true) {
    let at = skipWhitespace(text, stop);
    if (at >= text.length) return { calls, state: 'incomplete', stop };
    if (calls.length > 0) {
      if (text[at] === ']') return { calls, state: 'closed', stop: at + 1 };
      if (text[at] !== ',') return { calls, state: 'malformed', stop };
      at = skipWhitespace(text, at + 1);
    }
    const read = readPythonCall(text, at);
    if (read.kind !== 'call') return { calls, state: read.kind, stop };
    calls.push(read.call);
    stop = read.end;
  }
}

/** Llama 3.2 pythonic: the whole output is `[f(a=1), g(b="x")]`; text after the list is content, anything else is all content. */
export const pythonic: ToolCallFormat = {
  name: 'pythonic',
  needsSpecialTokens: false,
  parse(text, final) {
    const open = skipWhitespace(text, 0);
    if (open >= text.length) return output(final ? text : '', []);
    if (text[open] !== '[') return output(text, []);
    const read = readCallList(text, open + 1);
    if (read.state === 'closed') return output(text.slice(read.stop), read.calls);
    if (read.state === 'incomplete' && !final) return output('', read.calls);
    return output(read.calls.length === 0 ? text : text.slice(read.stop), read.calls);
  },
};

const TOOL_CODE_OPEN = '```tool_code';
const FENCE = '```';

/** The calls of a whole tool_code body: a pythonic list, calls one per line (or `;`), or JSON call objects; null if it is none of these. */
function toolCodeCalls(body: string): ParsedToolCall[] | null {
  const start = skipWhitespace(body, 0);
  if (start >= body.length) return null;
  if (body[start] === '{' || (body[start] === '[' && body[skipWhitespace(body, start + 1)] === '{')) {
    const value = parseJson(body);
    const calls = (Array.isArray(value) ? value : [value]).map((v) => callFromJson(v, ['parameters', 'arguments']));
    return calls.length > 0 && calls.every((c) => c !== null) ? (calls as ParsedToolCall[]) : null;
  }
  if (body[start] === '[') {
    const read = readCallList(body, start + 1);
    return read.state === 'closed' && skipWhitespace(body, read.stop) === body.length ? read.calls : null;
  }
  const calls: ParsedToolCall[] = [];
  let pos = start;
  while (pos < body.length) {
    const read = readPythonCall(body, pos);
    if (read.kind !== 'call') return null;
    calls.push(read.call);
    pos = skipWhitespace(body, read.end);
    if (body[pos] === ';') pos = skipWhitespace(body, pos + 1);
  }
  return calls;
}

/**
 * Gemma: calls in a ```tool_code fenced block (Python calls, or JSON `{"name", "parameters"}`),
 * any number of blocks, text around them content. Gemma 3's own chat template has no tool
 * format: this is the one Google's function-calling guide prompts for.
 */
export const toolCode: ToolCallFormat = {
  name: 'tool_code',
  needsSpecialTokens: false,
  parse(text, final) {
    const closeAt = (bodyStart: number): number => text.indexOf(FENCE, bodyStart);
    // A body is read whole: its calls are sent once the fence closes (or the text ends).
    return scanBlocks(text, final, TOOL_CODE_OPEN, FENCE, closeAt, (bodyStart, close) => {
      if (close < 0 && !final) return 'wait';
      return toolCodeCalls(text.slice(bodyStart, close < 0 ? text.length : close));
    });
  },
};
