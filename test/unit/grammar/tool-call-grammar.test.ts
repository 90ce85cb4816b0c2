// Tool calls as one grammar (src/grammar/tool-call-grammar.ts), no vocabulary: under the array
// framing (tool_choice required) and the block framing (auto), a function call's arguments hold
// to its schema and a custom tool's input — a JSON string — to its regex or grammar, escapes
// included; text under auto never holds the call marker, so every call the reader finds was
// constrained.
import { describe, expect, it } from 'vitest';
import type { ToolCallsFraming, ToolCallsGrammar } from '../../../src/contracts/generate.js';
import { toolCallsGrammarText } from '../../../src/grammar/tool-call-grammar.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';
import { larkToEbnf } from '../../../openai-compat/lark-grammar.js';

const xgrammar = loadXGrammar();

async function accepts(calls: ToolCallsGrammar, text: string): Promise<boolean> {
  const grammar = await xgrammar.api.Grammar.fromEBNF(toolCallsGrammarText(calls));
  try {
    return await xgrammar.api.Testings.isGrammarAcceptString(grammar, text);
  } finally {
    grammar.dispose();
  }
}

const SHELL = ['start: cmd (" " arg)~1..2', '?cmd: "ls"', '    | "cat"', 'arg: WORD ["/" WORD]', 'WORD: /[a-z_]{1,6}/'].join('\n');
const TOOLS: ToolCallsGrammar['tools'] = [
  { kind: 'function', name: 'f', parameters: JSON.stringify({ type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] }) },
  { kind: 'custom', name: 'ticket', input: { kind: 'regex', pattern: '[A-Z]{2,3}-[0-9]{1,4}' } },
  { kind: 'custom', name: 'shell', input: { kind: 'ebnf', grammar: larkToEbnf(SHELL) } },
  { kind: 'custom', name: 'quote', input: { kind: 'ebnf', grammar: larkToEbnf('start: "say \\"" /[a-z\\\\]+/ "\\"" /[\\t.]/') } },
  { kind: 'custom', name: 'note', input: { kind: 'text' } },
];
const array = (maxCalls: number | null): ToolCallsGrammar => ({ framing: { kind: 'array', maxCalls }, argumentsKey: 'parameters', tools: TOOLS });
const HERMES: ToolCallsFraming = { kind: 'blocks', open: '<tool_call>', close: '</tool_call>', padding: '\n', separator: '\n', maxCalls: null };
const blocks: ToolCallsGrammar = { framing: HERMES, argumentsKey: 'arguments', tools: TOOLS };

const custom = (name: string, input: string, key = 'parameters'): string => `{"name": "${name}", "${key}": ${JSON.stringify({ input }).replace('":', '": ')}}`;
const block = (call: string): string => `<tool_call>\n${call}\n</tool_call>`;

describe('tool calls grammar', () => {
  it("a patch-like Lark input (common LF imported): its lines' newlines escaped inside the JSON string", async () => {
    const patch = ['start: "*** Begin" LF edit+ "*** End" LF?', 'edit: "+ " /(\\S+)/ LF line* -> added', 'line: ">" /(.*)/ LF', '%import common.LF'].join('\n');
    const calls: ToolCallsGrammar = {
      framing: { kind: 'array', maxCalls: 1 },
      argumentsKey: 'parameters',
      tools: [{ kind: 'custom', name: 'patch', input: { kind: 'ebnf', grammar: larkToEbnf(patch) } }],
    };
    expect(await accepts(calls, `[${custom('patch', '*** Begin\n+ a.txt\n>say "hi"\n>\n*** End\n')}]`)).toBe(true);
    expect(await accepts(calls, `[${custom('patch', '*** Begin\n+ a.txt\n*** End')}]`)).toBe(true);
    expect(await accepts(calls, `[${custom('patch', '*** Begin\n*** End\n')}]`)).toBe(false);
    expect(await accepts(calls, '[{"name": "patch", "parameters": {"input": "*** Begin\n+ a\n*** End"}}]')).toBe(false);
  });

  it('a Lark input with any-character terminals and non-ASCII literals, escaped as JSON writes them', async () => {
    const calls: ToolCallsGrammar = {
      framing: { kind: 'array', maxCalls: 1 },
      argumentsKey: 'parameters',
      tools: [{ kind: 'custom', name: 'say', input: { kind: 'ebnf', grammar: larkToEbnf('start: "é→" /./ /./') } }],
    };
    for (const input of ['é→ab', 'é→"\\', 'é→\té', 'é→🙂x']) expect(await accepts(calls, `[${custom('say', input)}]`), input).toBe(true);
    // `.` is no newline; a raw control character is no JSON.
    for (const text of [`[${custom('say', 'é→\na')}]`, '[{"name": "say", "parameters": {"input": "é→\ta"}}]', `[${custom('say', 'e→ab')}]`]) {
      expect(await accepts(calls, text), text).toBe(false);
    }
  });

  it('a regex input with a lookahead: its automaton, over the JSON text of each character', async () => {
    const calls: ToolCallsGrammar = {
      framing: { kind: 'array', maxCalls: 1 },
      argumentsKey: 'parameters',
      tools: [{ kind: 'custom', name: 'branch', input: { kind: 'regex', pattern: '(?!main$)[a-z"/]+' } }],
    };
    for (const input of ['mainline', 'feature/x', 'mai', 'say"']) expect(await accepts(calls, `[${custom('branch', input)}]`), input).toBe(true);
    for (const input of ['main', 'Main', '']) expect(await accepts(calls, `[${custom('branch', input)}]`), input).toBe(false);
  });

  it('array framing: one or more calls, each valid for its tool', async () => {
    for (const text of [
      `[${custom('ticket', 'AB-12')}]`,
      `[{"name": "f", "parameters": {"a": 3}}, ${custom('ticket', 'ABC-1234')}]`,
      `[${custom('shell', 'ls foo/bar')}, ${custom('shell', 'cat a b')}]`,
      `[${custom('quote', 'say "a\\b"\t')}]`,
      `[${custom('note', 'free "text"\n\\ é')}]`,
    ]) {
      expect(await accepts(array(null), text), text).toBe(true);
    }
    for (const text of [
      '[]',
      `[${custom('ticket', 'ab-12')}]`,
      `[${custom('ticket', 'AB-12345')}]`,
      '[{"name": "f", "parameters": {"a": "x"}}]',
      `[${custom('shell', 'rm x')}]`,
      `[${custom('shell', 'ls')}]`,
      // A quote unescaped inside the JSON string, and a raw tab.
      '[{"name": "quote", "parameters": {"input": "say "a"."}}]',
      '[{"name": "note", "parameters": {"input": "a\tb"}}]',
      `[${custom('other', 'x')}]`,
    ]) {
      expect(await accepts(array(null), text), text).toBe(false);
    }
    expect(await accepts(array(1), `[${custom('ticket', 'AB-1')}, ${custom('ticket', 'AB-2')}]`)).toBe(false);
    expect(await accepts(array(1), `[${custom('ticket', 'AB-1')}]`)).toBe(true);
  });

  it('block framing: text without the marker, then calls held to their tools', async () => {
    for (const text of [
      '',
      'Just an answer.',
      'a < b, <tool_cal and <tool_callx <<tool_cal',
      `Let me file it.${block(custom('ticket', 'AB-1', 'arguments'))}`,
      `${block('{"name": "f", "arguments": {"a": 1}}')}\n${block(custom('shell', 'ls x', 'arguments'))}`,
    ]) {
      expect(await accepts(blocks, text), text).toBe(true);
    }
    for (const text of [
      'x <tool_call> junk',
      `x <tool_call>${custom('ticket', 'AB-1', 'arguments')}</tool_call>`,
      block(custom('ticket', 'nope', 'arguments')),
      `${block(custom('ticket', 'AB-1', 'arguments'))} and more`,
      'a <tool_call>',
    ]) {
      expect(await accepts(blocks, text), text).toBe(false);
    }
    // A one-character marker never appears in the text at all.
    const bar: ToolCallsGrammar = { ...blocks, framing: { ...HERMES, open: '|', close: '|', padding: '' } };
    expect(await accepts(bar, `no bars${'|'}${custom('ticket', 'AB-1', 'arguments')}|`)).toBe(true);
    expect(await accepts(bar, 'a | b')).toBe(false);
    const one: ToolCallsGrammar = { ...blocks, framing: { ...HERMES, maxCalls: 1 } };
    expect(await accepts(one, `${block(custom('ticket', 'AB-1', 'arguments'))}\n${block(custom('ticket', 'AB-2', 'arguments'))}`)).toBe(false);
  });
});
