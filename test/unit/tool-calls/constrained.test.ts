// tool_choice required / named: the JSON Schema generation is constrained by (checked with ajv
// against outputs that must pass and must fail), and the reading of such outputs into calls.

import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import type { ToolRequest } from '../../../src/contracts/tools.js';
import { constrainedToolCalls, parseToolCalls, ToolCallStream } from '../../../src/tool-calls/index.js';
import { canonicalJson } from '../../../src/vocabulary/index.js';

const weather = { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } }, required: ['city'], additionalProperties: false };
const tools: ToolRequest['tools'] = [
  { type: 'function', function: { name: 'get_weather', parameters: weather } },
  { type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {} } } },
];
const ids = () => 'call_x';

function validator(schemaText: string) {
  return new Ajv({ strict: false }).compile(JSON.parse(schemaText) as object);
}

describe('constrainedToolCalls', () => {
  it('is null when the model chooses (auto, none)', () => {
    expect(constrainedToolCalls({ tools, choice: { kind: 'auto' }, parallelToolCalls: true })).toBeNull();
    expect(constrainedToolCalls({ tools, choice: { kind: 'none' }, parallelToolCalls: true })).toBeNull();
  });

  it('named: the function parameters schema, canonical, and the output read as that call', () => {
    const plan = constrainedToolCalls({ tools, choice: { kind: 'function', name: 'get_weather' }, parallelToolCalls: true })!;
    expect(plan.grammar).toEqual({ kind: 'json_schema', schema: canonicalJson(weather) });
    expect(plan.grammar.kind === 'json_schema' && plan.grammar.schema).toBe(
      '{"additionalProperties":false,"properties":{"city":{"type":"string"},"days":{"minimum":1,"type":"integer"}},"required":["city"],"type":"object"}',
    );
    expect(parseToolCalls(plan.format, ' {"city": "Oslo"}', { newId: ids })).toEqual({
      content: null,
      toolCalls: [{ id: 'call_x', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo"}' } }],
    });
  });

  it('required: an array of calls to given tools with valid parameters, at least one', () => {
    const plan = constrainedToolCalls({ tools, choice: { kind: 'required' }, parallelToolCalls: true })!;
    if (plan.grammar.kind !== 'json_schema') throw new Error('expected a json_schema grammar');
    const valid = validator(plan.grammar.schema);
    expect(
      valid([
        { name: 'get_weather', parameters: { city: 'Oslo' } },
        { name: 'now', parameters: {} },
      ]),
    ).toBe(true);
    expect(valid([])).toBe(false);
    expect(valid([{ name: 'other', parameters: {} }])).toBe(false);
    expect(valid([{ name: 'get_weather', parameters: { days: 2 } }])).toBe(false);
    expect(valid([{ name: 'get_weather', parameters: { city: 'x' }, extra: 1 }])).toBe(false);
    const text = '[{"name": "get_weather", "parameters": {"city": "Oslo"}}, {"name": "now", "parameters": {}}]';
    expect(parseToolCalls(plan.format, text, { newId: ids }).toolCalls.map((c) => c.function)).toEqual([
      { name: 'get_weather', arguments: '{"city": "Oslo"}' },
      { name: 'now', arguments: '{}' },
    ]);
    const stream = new ToolCallStream(plan.format, { newId: ids });
    const deltas = [...[...text].flatMap((c) => stream.push(c)), ...stream.finish()];
    expect(deltas.filter((d) => d.kind === 'call').map((d) => d.kind === 'call' && d.name)).toEqual(['get_weather', 'now']);
  });

  it('required without parallel_tool_calls: exactly one call', () => {
    const plan = constrainedToolCalls({ tools, choice: { kind: 'required' }, parallelToolCalls: false })!;
    if (plan.grammar.kind !== 'json_schema') throw new Error('expected a json_schema grammar');
    const valid = validator(plan.grammar.schema);
    expect(valid([{ name: 'now', parameters: {} }])).toBe(true);
    expect(
      valid([
        { name: 'now', parameters: {} },
        { name: 'now', parameters: {} },
      ]),
    ).toBe(false);
  });
});
