// How each model family writes tool calls, as one pure reading per format:
// parse(text, final) → the content outside calls and the calls, as far as the text goes. With
// final false the text may still grow, so anything that may yet turn out to be part of a call
// (a tag's first characters, a call head not yet complete) is held back; the reading is
// append-only as text grows (the streaming parser relies on it and checks it). Whitespace-only
// content counts as none.

import type { ParsedToolCall } from '../contracts/tools.js';
import { callFromJson, callHead, heldPrefixLength, indexOutsideStrings, parseJson, scanCall, skipWhitespace } from './json-scan.js';

export interface ParsedOutput {
  readonly content: string;
  readonly calls: readonly ParsedToolCall[];
}

export interface ToolCallFormat {
  readonly name: string;
  /** Its markers are special tokens: the output must be detokenized with them kept. */
  readonly needsSpecialTokens: boolean;
  /** How the family writes its calls, where a grammar can hold them (tool_choice auto with a custom tool's grammar); absent: no such grammar. */
  readonly callBlocks?: CallBlocks;
  parse(text: string, final: boolean): ParsedOutput;
}

/** Calls as blocks after the answer's text: `open padding {"name": …, "<argumentsKey>": …} padding close`, joined by `separator`. */
export interface CallBlocks {
  readonly open: string;
  readonly close: string;
  readonly padding: string;
  readonly separator: string;
  readonly argumentsKey: string;
}

export const output = (content: string, calls: readonly ParsedToolCall[]): ParsedOutput => ({ content: /\S/.test(content) ? content : '', calls });

/** Content up to the end of the text, less a tail that may yet become `marker`. */
export const releasable = (text: string, final: boolean, marker: string): string => (final ? text : text.slice(0, text.length - heldPrefixLength(text, marker)));

const HERMES_OPEN = '<tool_call>';
const HERMES_CLOSE = '</tool_call>';
const NAME_ARGUMENTS = callHead(['arguments']);

/**
 * What a block's body reads as: its calls, null when it is text (the block, markers included,
 * is then content), or 'wait' while the block is unclosed and may still become calls.
 */
export type BlockRead = readonly ParsedToolCall[] | null | 'wait';

/**
 * Formats whose calls sit in blocks between an open and a close marker, any number, the text
 * around them content. `closeAt(bodyStart)` finds the close marker (-1 while unwritten);
 * `read(bodyStart, close)` reads one body. A text's last block may be unclosed: once `read`
 * answers for it, the scan ends there.
 */
export function scanBlocks(text: string, final: boolean, open: string, close: string, closeAt: (bodyStart: number) => number, read: (bodyStart: number, close: number) => BlockRead): ParsedOutput {
  let content = '';
  const calls: ParsedToolCall[] = [];
  let pos = 0;
  while (true) {
    const opened = text.indexOf(open, pos);
    if (opened < 0) {
      content += releasable(text.slice(pos), final, open);
      break;
    }
    content += text.slice(pos, opened);
    const bodyStart = opened + open.length;
    const closed = closeAt(bodyStart);
    const block = read(bodyStart, closed);
    if (block === 'wait') break;
    const end = closed < 0 ? text.length : closed + close.length;
    if (block !== null) calls.push(...block);
    else content += text.slice(opened, end);
    if (closed < 0) break;
    pos = end;
  }
  return output(content, calls);
}

/** Hermes / Qwen: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, any number, text between them is content. */
export const hermes: ToolCallFormat = {
  name: 'hermes',
  needsSpecialTokens: false,
  // As Qwen's chat templates write a call.
  callBlocks: { open: HERMES_OPEN, close: HERMES_CLOSE, padding: '\n', separator: '\n', argumentsKey: 'arguments' },
  parse(text, final) {
    const closeAt = (bodyStart: number): number => indexOutsideStrings(text, HERMES_CLOSE, bodyStart);
    return scanBlocks(text, final, HERMES_OPEN, HERMES_CLOSE, closeAt, (bodyStart, close) => {
      // An unclosed block's call streams as far as it is written, less a tail that may be the close tag.
      const limit = close >= 0 ? close : final ? text.length : text.length - heldPrefixLength(text, HERMES_CLOSE);
      const scanned = scanCall(text, bodyStart, limit, NAME_ARGUMENTS);
      if (scanned !== null) return [scanned.call];
      if (close < 0 && !final) return 'wait';
      // Not name-first: a whole JSON call in another key order, else the block was text.
      const call = callFromJson(parseJson(text.slice(bodyStart, limit)), ['arguments']);
      return call !== null ? [call] : null;
    });
  },
};

/**
 * A JSON array of call objects from `pos` (just inside its `[`): the calls, and the index
 * where reading stopped with whether the array closed there. Reading stops at the first thing
 * that is not a call object (the caller decides what that text is).
 */
export function parseCallArray(text: string, pos: number, head: RegExp, argumentKeys: readonly string[], final: boolean): { calls: ParsedToolCall[]; stop: number; closed: boolean } {
  const calls: ParsedToolCall[] = [];
  while (true) {
    let at = skipWhitespace(text, pos);
    if (text[at] === ']') return { calls, stop: at + 1, closed: true };
    if (calls.length > 0) {
      if (text[at] !== ',') return { calls, stop: pos, closed: false };
      at = skipWhitespace(text, at + 1);
    }
    const scanned = scanCall(text, at, text.length, head);
    if (scanned === null) {
      // Only the first object may be in another key order (read whole, at the end).
      const whole = calls.length === 0 && final ? parseJson(text.slice(pos - 1).trim()) : undefined;
      const all = Array.isArray(whole) ? whole.map((v) => callFromJson(v, argumentKeys)) : [];
      if (all.length > 0 && all.every((c) => c !== null)) return { calls: all as ParsedToolCall[], stop: text.length, closed: true };
      return { calls, stop: pos, closed: false };
    }
    calls.push(scanned.call);
    if (scanned.end < 0) return { calls, stop: text.length, closed: false };
    pos = scanned.end;
  }
}

const MISTRAL_MARKER = '[TOOL_CALLS]';

/** Mistral: content, then `[TOOL_CALLS]` and a JSON array of `{"name", "arguments"}`; text after the array is content. */
export const mistral: ToolCallFormat = {
  name: 'mistral',
  needsSpecialTokens: true,
  parse(text, final) {
    const marker = text.indexOf(MISTRAL_MARKER);
    if (marker < 0) return output(releasable(text, final, MISTRAL_MARKER), []);
    const before = text.slice(0, marker);
    const open = skipWhitespace(text, marker + MISTRAL_MARKER.length);
    if (open >= text.length) return output(before, []);
    if (text[open] !== '[') return output(text, []);
    const read = parseCallArray(text, open + 1, NAME_ARGUMENTS, ['arguments'], final);
    const rest = read.closed || final ? text.slice(read.stop) : '';
    return output(before + rest, read.calls);
  },
};

const PYTHON_TAG = '<|python_tag|>';
const LLAMA_KEYS = ['parameters', 'arguments'];
const NAME_PARAMETERS = callHead(LLAMA_KEYS);

/** Llama 3.x JSON: the whole output is `{"name", "parameters"}` (calls joined by `;`), maybe after `<|python_tag|>`. */
export const llama3Json: ToolCallFormat = {
  name: 'llama3_json',
  needsSpecialTokens: true,
  parse(text, final) {
    let pos = skipWhitespace(text, 0);
    if (text.startsWith(PYTHON_TAG, pos)) pos = skipWhitespace(text, pos + PYTHON_TAG.length);
    else if (!final && PYTHON_TAG.startsWith(text.slice(pos))) return output('', []);
    if (pos >= text.length) return output(final ? text : '', []);
    if (text[pos] !== '{') return output(text, []);
    const calls: ParsedToolCall[] = [];
    while (true) {
      const scanned = scanCall(text, pos, text.length, NAME_PARAMETERS);
      if (scanned === null) {
        if (!final) return output('', calls);
        const call = calls.length === 0 ? callFromJson(parseJson(text.slice(pos)), LLAMA_KEYS) : null;
        return call !== null ? output('', [call]) : output(calls.length === 0 ? text : text.slice(pos), calls);
      }
      calls.push(scanned.call);
      if (scanned.end < 0) return output('', calls);
      pos = skipWhitespace(text, scanned.end);
      if (pos >= text.length) return output('', calls);
      if (text[pos] !== ';') return output(text.slice(pos), calls);
      pos = skipWhitespace(text, pos + 1);
      if (pos >= text.length) return output('', calls);
    }
  },
};
