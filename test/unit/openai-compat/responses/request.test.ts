// A Responses create body read into the chat machinery's terms: flat tools and named tool_choice
// in chat's shape, text.format as response_format under the wire name text.format, the
// effort as reasoning_effort, the echoed defaults, and shared rejections reworded into
// Responses' field names.
import { describe, expect, it } from 'vitest';
import { type ConveyorError, invalidArg } from '../../../../src/errors.js';
import { inResponsesTerms, readResponsesRequest } from '../../../../openai-compat/responses/request.js';

const schema = { type: 'object', properties: { a: { type: 'string' } } };

describe('readResponsesRequest', () => {
  it('translates tools, tool_choice, text.format, reasoning.effort and max_output_tokens', () => {
    const request = readResponsesRequest({
      model: 'm',
      input: 'hi',
      tools: [{ type: 'function', name: 'f', parameters: schema, strict: true }],
      tool_choice: { type: 'function', name: 'f' },
      text: { format: { type: 'json_schema', name: 'out', schema, strict: true } },
      reasoning: { effort: 'low' },
      max_output_tokens: 5,
      top_k: 3,
    });
    expect(request.chatTools).toEqual({
      tools: [{ type: 'function', function: { name: 'f', parameters: schema, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      parallel_tool_calls: true,
    });
    expect(request.sampling).toEqual({
      sampling: { max_tokens: 5, top_k: 3, response_format: { type: 'json_schema', json_schema: { name: 'out', schema, strict: true } }, reasoning_effort: 'low' },
      wireNames: { max_tokens: 'max_output_tokens', response_format: 'text.format', reasoning_effort: 'reasoning.effort' },
    });
    expect(request.echo).toMatchObject({
      tool_choice: { type: 'function', name: 'f' },
      text: { format: { type: 'json_schema', name: 'out' } },
      reasoning: { effort: 'low', summary: null },
      max_output_tokens: 5,
    });
  });

  it('defaults to a stored, unstreamed, foreground response with OpenAI echoes', () => {
    const request = readResponsesRequest({ model: 'm', input: 'hi' });
    expect(request).toMatchObject({ stream: false, store: true, background: false, previousResponseId: null, instructions: null });
    expect(request.echo).toEqual({
      background: false,
      instructions: null,
      max_output_tokens: null,
      metadata: {},
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      store: true,
      temperature: 1,
      text: { format: { type: 'text' }, verbosity: 'medium' },
      tool_choice: 'auto',
      tools: [],
      top_p: 1,
      truncation: 'disabled',
      user: null,
    });
  });

  it.each<[Record<string, unknown>, string]>([
    [{ response_format: { type: 'json_object' } }, 'response_format'],
    [{ max_tokens: 3 }, 'max_tokens'],
    [{ reasoning_effort: 'low' }, 'reasoning_effort'],
    [{ include: ['reasoning.encrypted_content'] }, 'include'],
    [{ truncation: 'auto' }, 'truncation'],
    [{ reasoning: { summary: 'detailed' } }, 'reasoning.summary'],
    [{ text: { verbosity: 'low' } }, 'text.verbosity'],
    [{ tools: [{ type: 'file_search' }] }, 'tools[0].type'],
    [{ tools: [{ type: 'function', name: 'f', defer_loading: true }] }, 'tools[0].defer_loading'],
    [{ tool_choice: { type: 'allowed_tools' } }, 'tool_choice'],
    [{ metadata: { a: 1 } }, 'metadata'],
  ])('refuses %j naming %s', (extra, param) => {
    expect(() => readResponsesRequest({ model: 'm', input: 'hi', ...extra })).toThrow(expect.objectContaining({ param }));
  });
});

describe('inResponsesTerms', () => {
  it("rewords chat's field names in a rejection's param and message", async () => {
    const reworded = (error: ConveyorError) =>
      inResponsesTerms(() => {
        throw error;
      }).catch((e: unknown) => e as ConveyorError);
    expect(await reworded(invalidArg('tools[2].function.name must match', 'tools[2].function.name'))).toMatchObject({ param: 'tools[2].name', message: 'tools[2].name must match' });
    expect(await reworded(invalidArg('text.format.json_schema.schema is not valid', 'text.format.json_schema.schema'))).toMatchObject({
      param: 'text.format.schema',
      message: 'text.format.schema is not valid',
    });
    expect(await reworded(invalidArg('tool_choice cannot be combined with response_format', 'tool_choice'))).toMatchObject({ message: 'tool_choice cannot be combined with text.format' });
    expect(await reworded(invalidArg('the chat template rejected the messages', 'messages'))).toMatchObject({ param: 'input' });
  });
});
