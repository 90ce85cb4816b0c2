// The tool-call formats: fixed examples per model family, then the property the streaming
// parser exists for: for random calls and content, and any chunking of the text, the deltas
// accumulated as the OpenAI SDK accumulates them equal the reading of the whole text.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ids, streamed, whole } from '../../support/tool-calls.js';
import type { ParsedToolCall } from '../../../src/contracts/tools.js';
import { hermes, llama3Json, mistral, ToolCallStream, type ToolCallFormat } from '../../../src/tool-calls/index.js';

describe('hermes', () => {
  it('reads calls and keeps the text around them as content', () => {
    const text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>';
    expect(whole(hermes, text)).toEqual({
      content: 'Let me check.\n\n',
      calls: [
        { name: 'get_weather', arguments: '{"city": "Paris"}' },
        { name: 'now', arguments: '{}' },
      ],
    });
  });

  it('reads a call written arguments-first, and leaves a block that is no call as text', () => {
    expect(whole(hermes, '<tool_call>{"arguments": {"a": 1}, "name": "f"}</tool_call>').calls).toEqual([{ name: 'f', arguments: '{"a":1}' }]);
    expect(whole(hermes, 'x <tool_call>not json</tool_call>')).toEqual({ content: 'x <tool_call>not json</tool_call>', calls: [] });
    // The closing tag inside the call's own string arguments is text, not the end of the call.
    expect(whole(hermes, '<tool_call>{"name": "echo", "arguments": {"text": "a </tool_call> b"}}</tool_call> after').calls).toEqual([{ name: 'echo', arguments: '{"text": "a </tool_call> b"}' }]);
  });

  it('has no content when only whitespace surrounds the calls', () => {
    expect(whole(hermes, '\n<tool_call>{"name": "f", "arguments": {}}</tool_call>\n').content).toBeNull();
  });

  it('streams the name first, then the arguments, and never sends a tag prefix as content', () => {
    const stream = new ToolCallStream(hermes, { newId: ids() });
    expect(stream.push('Hi <tool')).toEqual([{ kind: 'content', text: 'Hi ' }]);
    expect(stream.push('_call>{"name": "f", ')).toEqual([]);
    expect(stream.push('"arguments": {"a"')).toEqual([
      { kind: 'call', index: 0, id: 'call_0', name: 'f' },
      { kind: 'arguments', index: 0, text: '{"a"' },
    ]);
    expect(stream.push(': 1}}</tool_')).toEqual([{ kind: 'arguments', index: 0, text: ': 1}' }]);
    expect(stream.push('call> bye')).toEqual([{ kind: 'content', text: ' bye' }]);
    expect(stream.finish()).toEqual([]);
  });

  it('releases held-back text that never became a tag when the text ends', () => {
    const stream = new ToolCallStream(hermes);
    expect(stream.push('a <tool_c')).toEqual([{ kind: 'content', text: 'a ' }]);
    expect(stream.finish()).toEqual([{ kind: 'content', text: '<tool_c' }]);
  });
});

describe('mistral', () => {
  it('reads the array after [TOOL_CALLS]', () => {
    expect(whole(mistral, 'ok [TOOL_CALLS][{"name": "a", "arguments": {"x": [1, 2]}}, {"name": "b", "arguments": {}}]')).toEqual({
      content: 'ok ',
      calls: [
        { name: 'a', arguments: '{"x": [1, 2]}' },
        { name: 'b', arguments: '{}' },
      ],
    });
  });

  it('is plain content without the marker', () => {
    expect(whole(mistral, 'just [text]')).toEqual({ content: 'just [text]', calls: [] });
  });
});

describe('llama3_json', () => {
  it('reads a call with parameters, after <|python_tag|> or not, and calls joined by ;', () => {
    expect(whole(llama3Json, '<|python_tag|>{"name": "f", "parameters": {"q": "x"}}').calls).toEqual([{ name: 'f', arguments: '{"q": "x"}' }]);
    expect(whole(llama3Json, '{"name": "f", "parameters": {}}; {"name": "g", "parameters": {"n": 2}}').calls).toEqual([
      { name: 'f', arguments: '{}' },
      { name: 'g', arguments: '{"n": 2}' },
    ]);
  });

  it('is plain content when the text does not start with a call', () => {
    expect(whole(llama3Json, 'The answer is {"name": "f"}')).toEqual({ content: 'The answer is {"name": "f"}', calls: [] });
    expect(whole(llama3Json, '{"not": "a call"}')).toEqual({ content: '{"not": "a call"}', calls: [] });
  });
});

// ---------------------------------------------------------------------------------------------
// The property.

const name = fc.stringMatching(/^[a-zA-Z0-9_-]{1,12}$/);
const args = fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
const call = fc.record({ name, args, indent: fc.constantFrom(0, 2) }).map(({ name, args, indent }) => ({ name, arguments: JSON.stringify(args, null, indent) }));
const content = fc.string({ unit: fc.constantFrom('a', ' ', '\n', '<', '>', '/', '[', ']', '{', '}', 't', '_', 'é', '"'), maxLength: 20 });
const chunkSizes = fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 12 });

function chunk(text: string, sizes: readonly number[]): string[] {
  const out: string[] = [];
  for (let at = 0, i = 0; at < text.length; i++) {
    const size = sizes[i % sizes.length]!;
    out.push(text.slice(at, at + size));
    at += size;
  }
  return out;
}

interface Case {
  readonly text: string;
  readonly expected: { content: string | null; calls: ParsedToolCall[] };
}

const nonBlank = (s: string): string | null => (/\S/.test(s) ? s : null);

const hermesCase = fc.array(fc.tuple(content, call), { maxLength: 3 }).chain((pairs) =>
  content.map((tail): Case => {
    const parts = pairs.map(([text, c]) => `${text}<tool_call>\n{"name": "${c.name}", "arguments": ${c.arguments}}\n</tool_call>`);
    return { text: parts.join('') + tail, expected: { content: nonBlank(pairs.map(([t]) => t).join('') + tail), calls: pairs.map(([, c]) => c) } };
  }),
);

const mistralCase = fc.tuple(content, fc.array(call, { minLength: 1, maxLength: 3 })).map(
  ([text, calls]): Case => ({
    text: `${text}[TOOL_CALLS][${calls.map((c) => `{"name": "${c.name}", "arguments": ${c.arguments}}`).join(', ')}]`,
    expected: { content: nonBlank(text), calls },
  }),
);

const llamaCase = fc.tuple(fc.boolean(), fc.array(call, { minLength: 1, maxLength: 3 })).map(
  ([tag, calls]): Case => ({
    text: `${tag ? '<|python_tag|>' : ''}${calls.map((c) => `{"name": "${c.name}", "parameters": ${c.arguments}}`).join('; ')}`,
    expected: { content: null, calls },
  }),
);

const cases: [ToolCallFormat, fc.Arbitrary<Case>, (c: Case) => boolean][] = [
  // The content alphabet cannot spell a marker; the checks say so should it ever change.
  [hermes, hermesCase, (c) => !(c.expected.content ?? '').includes('<tool_call>')],
  [mistral, mistralCase, (c) => !(c.expected.content ?? '').includes('[TOOL_CALLS]')],
  [llama3Json, llamaCase, () => true],
];

describe.each(cases)('%s: streaming equals the whole reading', (format, arbitrary, sane) => {
  it('for random calls and any chunking', () => {
    fc.assert(
      fc.property(arbitrary.filter(sane), chunkSizes, ({ text, expected }, sizes) => {
        expect(whole(format, text)).toEqual(expected);
        expect(streamed(format, chunk(text, sizes))).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});
