// The tool fields of a chat request: what is accepted as given and what is a 400 naming the field.

import { describe, expect, it } from 'vitest';
import { ConveyorError } from '../../../src/errors.js';
import { parseToolRequest, type UncheckedToolFields } from '../../../src/vocabulary/index.js';

const fn = (name: string, parameters?: unknown) => ({ type: 'function', function: { name, ...(parameters === undefined ? {} : { parameters }) } });
const object = { type: 'object', properties: { q: { type: 'string' } } };

function rejection(fields: UncheckedToolFields): { param: string | undefined; message: string } {
  try {
    parseToolRequest(fields);
  } catch (error) {
    if (error instanceof ConveyorError) return { param: error.param, message: error.message };
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('parseToolRequest', () => {
  it('defaults: no tools → none; tools → auto; parallel calls allowed; absent parameters take none', () => {
    expect(parseToolRequest({})).toEqual({ tools: [], choice: { kind: 'none' }, parallelToolCalls: true });
    const request = parseToolRequest({ tools: [fn('search', object), fn('now')], parallel_tool_calls: false });
    expect(request.choice).toEqual({ kind: 'auto' });
    expect(request.parallelToolCalls).toBe(false);
    expect(request.tools[1]).toEqual({ type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {} } } });
    expect(parseToolRequest({ tools: [fn('search', object)], tool_choice: { type: 'function', function: { name: 'search' } } }).choice).toEqual({ kind: 'function', name: 'search' });
    expect(parseToolRequest({ tools: [fn('search', object)], tool_choice: 'required' }).choice).toEqual({ kind: 'required' });
    expect(parseToolRequest({ tool_choice: 'auto' }).choice).toEqual({ kind: 'auto' });
  });

  it.each<[string, UncheckedToolFields, string]>([
    ['tools not a list', { tools: {} }, 'tools'],
    ['a tool of another type', { tools: [{ type: 'code_interpreter' }] }, 'tools[0].type'],
    ['a name with a space', { tools: [fn('has space')] }, 'tools[0].function.name'],
    ['a name of 65 characters', { tools: [fn('x'.repeat(65))] }, 'tools[0].function.name'],
    ['a duplicate name', { tools: [fn('a'), fn('a')] }, 'tools[1].function.name'],
    ['parameters not an object', { tools: [fn('a', 'x')] }, 'tools[0].function.parameters'],
    ['parameters not describing an object', { tools: [fn('a', { type: 'string' })] }, 'tools[0].function.parameters'],
    ['parameters that do not compile', { tools: [fn('a', { type: 'object', properties: { q: { type: 'strin' } } })] }, 'tools[0].function.parameters'],
    ['an unresolvable $ref', { tools: [fn('a', { type: 'object', properties: { q: { $ref: '#/$defs/missing' } } })] }, 'tools[0].function.parameters'],
    ['required without tools', { tool_choice: 'required' }, 'tool_choice'],
    ['a named choice without tools', { tool_choice: { type: 'function', function: { name: 'a' } } }, 'tool_choice'],
    ['a named choice of an unknown function', { tools: [fn('a')], tool_choice: { type: 'function', function: { name: 'b' } } }, 'tool_choice'],
    ['an unknown choice', { tools: [fn('a')], tool_choice: 'sometimes' }, 'tool_choice'],
    ['parallel_tool_calls not a boolean', { parallel_tool_calls: 'yes' }, 'parallel_tool_calls'],
  ])('refuses %s, naming the field', (_, fields, param) => {
    expect(rejection(fields).param).toBe(param);
  });

  it('says which tools there are when tool_choice names another', () => {
    expect(rejection({ tools: [fn('a'), fn('b')], tool_choice: { type: 'function', function: { name: 'c' } } }).message).toContain("the tools are 'a', 'b'");
  });
});
