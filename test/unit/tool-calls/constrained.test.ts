// tool_choice required / named: the constraint generation is held to (the required array's
// grammar checked with xgrammar against outputs that must pass and must fail), and the reading
// of such outputs into calls.

import { describe, expect, it } from 'vitest';
import type { GrammarSpec } from '../../../src/contracts/generate.js';
import type { ToolRequest } from '../../../src/contracts/tools.js';
import { toolCallsGrammarText } from '../../../src/grammar/tool-call-grammar.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';
import { constrainedToolCalls, parseToolCalls, ToolCallStream } from '../../../src/tool-calls/index.js';
import { canonicalSchemaJson } from '../../../src/vocabulary/index.js';

const weather = { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } }, required: ['city'], additionalProperties: false };
const tools: ToolRequest['tools'] = [
  { type: 'function', function: { name: 'get_weather', parameters: weather } },
  { type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {} } } },
];
const ids = () => 'call_x';

const xgrammar = loadXGrammar();

/** Whether the spec's grammar accepts the text (in the layout the engine writes). */
function acceptor(spec: GrammarSpec): (text: string) => Promise<boolean> {
  if (spec.kind !== 'tool_calls') throw new Error('expected a tool_calls grammar');
  return async (text) => {
    const grammar = await xgrammar.api.Grammar.fromEBNF(toolCallsGrammarText(spec.calls));
    try {
      return await xgrammar.api.Testings.isGrammarAcceptString(grammar, text);
    } finally {
      grammar.dispose();
    }
  };
}

describe('constrainedToolCalls', () => {
  it('is null when the model chooses (auto, none)', () => {
    expect(constrainedToolCalls({ tools, choice: { kind: 'auto' }, parallelToolCalls: true })).toBeNull();
    expect(constrainedToolCalls({ tools, choice: { kind: 'none' }, parallelToolCalls: true })).toBeNull();
  });

  it('named: the function parameters schema, canonical, and the output read as that call', () => {
    const plan = constrainedToolCalls({ tools, choice: { kind: 'function', name: 'get_weather' }, parallelToolCalls: true })!;
    expect(plan.grammar).toEqual({ kind: 'json_schema', schema: canonicalSchemaJson(weather) });
    expect(plan.grammar.kind === 'json_schema' && plan.grammar.schema).toBe(
      '{"additionalProperties":false,"properties":{"city":{"type":"string"},"days":{"minimum":1,"type":"integer"}},"required":["city"],"type":"object"}',
    );
    expect(parseToolCalls(plan.format, ' {"city": "Oslo"}', { newId: ids })).toEqual({
      content: null,
      toolCalls: [{ id: 'call_x', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo"}' } }],
    });
  });

  it('required: an array of calls to given tools with valid parameters, at least one', async () => {
    const plan = constrainedToolCalls({ tools, choice: { kind: 'required' }, parallelToolCalls: true })!;
    const accepts = acceptor(plan.grammar);
    const text = '[{"name": "get_weather", "parameters": {"city": "Oslo"}}, {"name": "now", "parameters": {}}]';
    expect(await accepts(text)).toBe(true);
    expect(await accepts('[{"name": "get_weather", "parameters": {"city": "Oslo", "days": 2}}]')).toBe(true);
    for (const wrong of [
      '[]',
      '[{"name": "other", "parameters": {}}]',
      '[{"name": "get_weather", "parameters": {"days": 2}}]',
      '[{"name": "get_weather", "parameters": {"city": "x"}, "extra": 1}]',
      '[{"name": "get_weather", "parameters": {"days": 2, "city": "x"}}]',
    ]) {
      expect(await accepts(wrong), wrong).toBe(false);
    }
    expect(parseToolCalls(plan.format, text, { newId: ids }).toolCalls.map((c) => c.function)).toEqual([
      { name: 'get_weather', arguments: '{"city": "Oslo"}' },
      { name: 'now', arguments: '{}' },
    ]);
    const stream = new ToolCallStream(plan.format, { newId: ids });
    const deltas = [...[...text].flatMap((c) => stream.push(c)), ...stream.finish()];
    expect(deltas.filter((d) => d.kind === 'call').map((d) => d.kind === 'call' && d.name)).toEqual(['get_weather', 'now']);
  });

  it('required without parallel_tool_calls: exactly one call', async () => {
    const plan = constrainedToolCalls({ tools, choice: { kind: 'required' }, parallelToolCalls: false })!;
    const accepts = acceptor(plan.grammar);
    expect(await accepts('[{"name": "now", "parameters": {}}]')).toBe(true);
    expect(await accepts('[{"name": "now", "parameters": {}}, {"name": "now", "parameters": {}}]')).toBe(false);
  });
});
