// DeepSeek V3's tool calls, as its chat template writes them into the history:
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
//   (more <｜tool▁call▁begin｜>…<｜tool▁call▁end｜>, each maybe after a newline)<｜tool▁calls▁end｜>
// Text before the calls is content; so is text after them. A call is sent once its name line and
// the ```json fence are read; its arguments stream as written, less a tail that may be the closing fence.

import type { ParsedToolCall } from '../contracts/tools.js';
import { output, releasable, type ParsedOutput, type ToolCallFormat } from './formats.js';
import { heldPrefixLength, skipWhitespace } from './json-scan.js';

const CALLS_BEGIN = '<｜tool▁calls▁begin｜>';
const CALLS_END = '<｜tool▁calls▁end｜>';
const CALL_BEGIN = '<｜tool▁call▁begin｜>';
const CALL_END = '<｜tool▁call▁end｜>';
const SEP = '<｜tool▁sep｜>';
const JSON_FENCE = '```json';
const CLOSE_FENCE = '\n```';

type CallRead =
  /**
   * A call whose head is read. `next`: where the text after it starts (after its CALL_END, or
   * after the closing fence where no CALL_END follows); null while the call is still open.
   */
  { readonly kind: 'call'; readonly call: ParsedToolCall; readonly next: number | null; readonly ended: boolean } | { readonly kind: 'incomplete' } | { readonly kind: 'malformed' };

/** Whether `text` from `pos` on is a proper prefix of `marker` (it may yet become it). */
const mayBecome = (text: string, pos: number, marker: string): boolean => text.length - pos < marker.length && marker.startsWith(text.slice(pos));

/** One call from `pos`, just after its CALL_BEGIN. */
function readCall(text: string, pos: number, final: boolean): CallRead {
  const sep = text.indexOf(SEP, pos);
  if (sep < 0) {
    const type = /^\w*/.exec(text.slice(pos))![0].length;
    return !final && mayBecome(text, pos + type, SEP) ? { kind: 'incomplete' } : { kind: 'malformed' };
  }
  if (!/^\w+$/.test(text.slice(pos, sep))) return { kind: 'malformed' };
  const nameStart = sep + SEP.length;
  const newline = text.indexOf('\n', nameStart);
  if (newline < 0) return !final && /^[\w.-]*$/.test(text.slice(nameStart)) ? { kind: 'incomplete' } : { kind: 'malformed' };
  const name = text.slice(nameStart, newline).trim();
  if (!/^[\w.-]+$/.test(name)) return { kind: 'malformed' };
  const fence = newline + 1;
  if (!text.startsWith(`${JSON_FENCE}\n`, fence)) return !final && mayBecome(text, fence, `${JSON_FENCE}\n`) ? { kind: 'incomplete' } : { kind: 'malformed' };
  const argsStart = fence + JSON_FENCE.length + 1;
  const close = text.indexOf(CLOSE_FENCE, argsStart);
  if (close < 0) {
    const args = final ? text.slice(argsStart) : text.slice(argsStart, text.length - heldPrefixLength(text, CLOSE_FENCE));
    return { kind: 'call', call: { name, arguments: args }, next: final ? text.length : null, ended: false };
  }
  const call = { name, arguments: text.slice(argsStart, close) };
  const fenceEnd = close + CLOSE_FENCE.length;
  const after = skipWhitespace(text, fenceEnd);
  if (text.startsWith(CALL_END, after)) return { kind: 'call', call, next: after + CALL_END.length, ended: true };
  return { kind: 'call', call, next: !final && mayBecome(text, after, CALL_END) ? null : fenceEnd, ended: false };
}

export const deepseekV3: ToolCallFormat = {
  name: 'deepseek_v3',
  needsSpecialTokens: true,
  parse(text, final): ParsedOutput {
    const begin = text.indexOf(CALLS_BEGIN);
    if (begin < 0) return output(releasable(text, final, CALLS_BEGIN), []);
    let content = text.slice(0, begin);
    const calls: ParsedToolCall[] = [];
    let pos = begin + CALLS_BEGIN.length;
    while (true) {
      const at = skipWhitespace(text, pos);
      if (at >= text.length) break;
      if (text.startsWith(CALLS_END, at)) {
        content += text.slice(at + CALLS_END.length);
        break;
      }
      if (!text.startsWith(CALL_BEGIN, at)) {
        if (!final && (mayBecome(text, at, CALL_BEGIN) || mayBecome(text, at, CALLS_END))) break;
        // Not a call: the rest is text (from the marker itself when no call was read).
        content += text.slice(calls.length === 0 ? begin : pos);
        break;
      }
      const read = readCall(text, at + CALL_BEGIN.length, final);
      if (read.kind === 'incomplete') break;
      if (read.kind === 'malformed') {
        content += text.slice(calls.length === 0 ? begin : pos);
        break;
      }
      calls.push(read.call);
      if (read.next === null) break;
      if (!read.ended) {
        // A call without its end marker, then something else: the call stands, the rest is text.
        content += text.slice(read.next);
        break;
      }
      pos = read.next;
    }
    return output(content, calls);
  },
};
