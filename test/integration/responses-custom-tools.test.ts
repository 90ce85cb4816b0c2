// Responses `custom` tools (freeform input, as Codex sends them) through the official OpenAI SDK
// on the real server: a forced tool_choice makes the whole output one custom_tool_call whose
// input holds to the tool's format — a regex, or a Lark grammar translated to the engine's
// EBNF — on every sample at temperature 1 from the random tiny model, whole and streamed
// (custom_tool_call_input.delta / .done); custom tool calls and their outputs are taken as
// history; Lark the engine cannot enforce and hosted tool types are 400s naming the field.

import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let client: OpenAI;

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  server = await startTestServer(repository);
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 120_000);
afterAll(async () => server?.stop());

const TICKET = { type: 'custom' as const, name: 'ticket', description: 'Files a ticket id.', format: { type: 'grammar' as const, syntax: 'regex' as const, definition: '[A-Z]{2,3}-[0-9]{1,4}' } };
const SHELL = {
  type: 'custom' as const,
  name: 'shell',
  format: {
    type: 'grammar' as const,
    syntax: 'lark' as const,
    definition: ['// a tiny shell', 'start: cmd (" " arg)~1..2', '?cmd: "ls"', '    | "cat"', 'arg: WORD ["/" WORD]', 'WORD: /[a-z_]{1,6}/'].join('\n'),
  },
};
const input = 'File it.';

type CustomCall = OpenAI.Responses.ResponseCustomToolCall;
const onlyCustomCall = (response: OpenAI.Responses.Response): CustomCall => {
  expect(response.output.map((item) => item.type)).toEqual(['custom_tool_call']);
  return response.output[0] as CustomCall;
};

describe('a forced custom tool', () => {
  it('holds every sampled input to its regex (temperature 1)', async () => {
    for (let seed = 0; seed < 8; seed++) {
      const response = await client.responses.create({
        model: 'qwen3',
        input,
        tools: [TICKET],
        tool_choice: { type: 'custom', name: 'ticket' },
        temperature: 1,
        seed,
        max_output_tokens: 40,
      } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
      expect(response.status).toBe('completed');
      const call = onlyCustomCall(response);
      expect(call).toMatchObject({ type: 'custom_tool_call', name: 'ticket', status: 'completed' });
      expect(call.id).toMatch(/^ctc_/);
      expect(call.call_id).toMatch(/^call_/);
      expect(call.input).toMatch(/^[A-Z]{2,3}-[0-9]{1,4}$/);
    }
  });

  it('holds every sampled input to its Lark grammar (temperature 1)', async () => {
    for (let seed = 0; seed < 8; seed++) {
      const response = await client.responses.create({
        model: 'qwen3',
        input,
        tools: [SHELL],
        tool_choice: { type: 'custom', name: 'shell' },
        temperature: 1,
        seed,
        max_output_tokens: 60,
      } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
      expect(response.status).toBe('completed');
      expect(onlyCustomCall(response).input).toMatch(/^(ls|cat)( [a-z_]{1,6}(\/[a-z_]{1,6})?){1,2}$/);
    }
    // Regex terminals' class escapes, spelled out for the engine.
    const pair = { type: 'custom', name: 'pair', format: { type: 'grammar', syntax: 'lark', definition: 'start: /\\S{2}\\s\\d\\w/' } };
    for (let seed = 0; seed < 4; seed++) {
      const response = await client.responses.create({
        model: 'qwen3',
        input,
        tools: [pair],
        tool_choice: { type: 'custom', name: 'pair' },
        temperature: 1,
        seed,
        max_output_tokens: 40,
      } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
      expect(onlyCustomCall(response).input).toMatch(/^\S{2}\s\d\w$/u);
    }
  });

  it('streams the input as custom_tool_call_input deltas adding up to the done input and the item', async () => {
    const stream = await client.responses.create({
      model: 'qwen3',
      input,
      tools: [TICKET, SHELL],
      tool_choice: { type: 'custom', name: 'ticket' },
      temperature: 1,
      seed: 3,
      stream: true,
    } as OpenAI.Responses.ResponseCreateParamsStreaming);
    const types: string[] = [];
    let deltas = '';
    let done: string | null = null;
    let completed: OpenAI.Responses.Response | null = null;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.custom_tool_call_input.delta') deltas += event.delta;
      if (event.type === 'response.custom_tool_call_input.done') done = event.input;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.output_item.added');
    expect(types.filter((t) => t === 'response.custom_tool_call_input.delta').length).toBeGreaterThan(0);
    expect(done).toBe(deltas);
    expect(deltas).toMatch(/^[A-Z]{2,3}-[0-9]{1,4}$/);
    expect(onlyCustomCall(completed!).input).toBe(deltas);
    expect(completed!.tools).toEqual([
      { type: 'custom', name: 'ticket', description: 'Files a ticket id.', format: TICKET.format },
      { type: 'custom', name: 'shell', description: null, format: SHELL.format },
    ]);
  });

  it('with a text format, answers one custom_tool_call with the output as its input', async () => {
    const response = await client.responses.create({
      model: 'qwen3',
      input,
      tools: [{ type: 'custom', name: 'note' }],
      tool_choice: { type: 'custom', name: 'note' },
      temperature: 0,
      max_output_tokens: 6,
    } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    const call = response.output[0] as CustomCall;
    expect(call).toMatchObject({ type: 'custom_tool_call', name: 'note' });
    expect(typeof call.input).toBe('string');
  });
});

describe('history and refusals', () => {
  it('takes custom_tool_call and custom_tool_call_output items as history', async () => {
    const response = await client.responses.create({
      model: 'qwen3',
      tools: [TICKET],
      input: [
        { role: 'user', content: 'File it.' },
        { type: 'custom_tool_call', call_id: 'call_1', name: 'ticket', input: 'AB-12' },
        { type: 'custom_tool_call_output', call_id: 'call_1', output: 'filed' },
      ],
      max_output_tokens: 4,
      temperature: 0,
    } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(response.status).toBe('incomplete');
  });

  const refused = async (body: Record<string, unknown>): Promise<{ status: number; error: Record<string, unknown> }> => {
    const response = await fetch(`${server.http}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'qwen3', input, ...body }) });
    return { status: response.status, error: ((await response.json()) as { error: Record<string, unknown> }).error };
  };
  const lark = (definition: string) => ({ tools: [{ type: 'custom', name: 'g', format: { type: 'grammar', syntax: 'lark', definition } }], tool_choice: { type: 'custom', name: 'g' } });

  it('refuses Lark the engine cannot enforce, naming the definition and the construct', async () => {
    for (const [definition, construct] of [
      ['start: WORD\n%import common.WORD', '%import'],
      ['start: "ls"i', 'case-insensitive'],
      ['start: /a(?=b)b/', 'lookaround'],
      ['start: x', 'undefined rule x'],
    ] as const) {
      const { status, error } = await refused(lark(definition));
      expect(status).toBe(400);
      expect(error).toMatchObject({ param: 'tools[0].format.definition', code: 'unsupported_parameter' });
      expect(error.message).toContain(construct);
    }
  });

  it('refuses hosted tool types by type, and a bad format or choice by field', async () => {
    for (const type of ['web_search', 'web_search_preview', 'file_search', 'code_interpreter', 'computer_use_preview', 'image_generation', 'local_shell', 'mcp']) {
      const { status, error } = await refused({ tools: [TICKET, { type }] });
      expect(status).toBe(400);
      expect(error).toMatchObject({ param: 'tools[1].type', code: 'unsupported_parameter' });
      expect(error.message).toContain(type);
    }
    expect((await refused({ tools: [{ ...TICKET, format: { type: 'grammar', syntax: 'peg', definition: 'x' } }] })).error.param).toBe('tools[0].format.syntax');
    expect((await refused({ tools: [TICKET], tool_choice: { type: 'custom', name: 'other' } })).error.param).toBe('tool_choice.name');
  });
});
