// Responses `custom` tools (freeform input, as Codex sends them) through the official OpenAI SDK
// on the real server: a forced tool_choice makes the whole output one custom_tool_call whose
// input holds to the tool's format — a regex, or a Lark grammar translated to the engine's
// EBNF — on every sample at temperature 1 from the random tiny model, whole and streamed
// (custom_tool_call_input.delta / .done); custom tool calls and their outputs are taken as
// history; Lark the engine cannot enforce and hosted tool types are 400s naming the field.
// Under tool_choice required and auto a custom call's input holds to the same format inside the
// call's JSON, beside function calls whose arguments hold to their schemas.

import { Ajv2020 } from 'ajv/dist/2020.js';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { useLlmServerWithClient } from '../support/generation.js';

const llm = useLlmServerWithClient();

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

/** A whole response to `input` with `tools` under `tool_choice`, sampled at temperature 1 from `seed`. */
const sampled = (tools: object[], toolChoice: unknown, seed: number, maxOutputTokens: number, more: Record<string, unknown> = {}) =>
  llm.client.responses.create({
    model: 'qwen3',
    input,
    tools,
    tool_choice: toolChoice,
    temperature: 1,
    seed,
    max_output_tokens: maxOutputTokens,
    ...more,
  } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
/** The same with the custom tool `tool` forced. */
const forced = (tool: { readonly name: string }, seed: number, maxOutputTokens: number) => sampled([tool], { type: 'custom', name: tool.name }, seed, maxOutputTokens);

type CustomCall = OpenAI.Responses.ResponseCustomToolCall;
const onlyCustomCall = (response: OpenAI.Responses.Response): CustomCall => {
  expect(response.output.map((item) => item.type)).toEqual(['custom_tool_call']);
  return response.output[0] as CustomCall;
};

describe('a forced custom tool', () => {
  it('holds every sampled input to its regex (temperature 1)', async () => {
    for (let seed = 0; seed < 8; seed++) {
      const response = await forced(TICKET, seed, 40);
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
      const response = await forced(SHELL, seed, 60);
      expect(response.status).toBe('completed');
      expect(onlyCustomCall(response).input).toMatch(/^(ls|cat)( [a-z_]{1,6}(\/[a-z_]{1,6})?){1,2}$/);
    }
    // Regex terminals' class escapes, spelled out for the engine.
    const pair = { type: 'custom', name: 'pair', format: { type: 'grammar', syntax: 'lark', definition: 'start: /\\S{2}\\s\\d\\w/' } };
    for (let seed = 0; seed < 4; seed++) {
      const response = await forced(pair, seed, 40);
      expect(onlyCustomCall(response).input).toMatch(/^\S{2}\s\d\w$/u);
    }
  });

  it('streams the input as custom_tool_call_input deltas adding up to the done input and the item', async () => {
    const stream = await llm.client.responses.create({
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
    const response = await llm.client.responses.create({
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

const LOOKUP = {
  type: 'function' as const,
  name: 'lookup',
  description: 'Looks a record up.',
  parameters: { type: 'object', properties: { id: { type: 'integer', minimum: 1, maximum: 99 }, tag: { type: 'string', enum: ['a', 'b'] } }, required: ['id', 'tag'], additionalProperties: false },
  strict: true,
};
const validLookup = new Ajv2020({ strict: false }).compile(LOOKUP.parameters);
const TICKET_INPUT = /^[A-Z]{2,3}-[0-9]{1,4}$/;
const SHELL_INPUT = /^(ls|cat)( [a-z_]{1,6}(\/[a-z_]{1,6})?){1,2}$/;

/** Every call in the output holds to its tool: custom inputs to their formats, function arguments to their schema. */
function expectCallsValid(output: OpenAI.Responses.ResponseOutputItem[]): number {
  let calls = 0;
  for (const item of output) {
    if (item.type === 'custom_tool_call') {
      calls += 1;
      expect(item.input).toMatch(item.name === 'ticket' ? TICKET_INPUT : SHELL_INPUT);
    } else if (item.type === 'function_call') {
      calls += 1;
      expect(item.name).toBe('lookup');
      expect(validLookup(JSON.parse(item.arguments)), item.arguments).toBe(true);
    }
  }
  return calls;
}

/** `<tool_call>` in the test model's vocabulary (Qwen3's): biased up, the random model opens a call at once under auto. */
const TOOL_CALL_TOKEN = 151657;

describe('custom tools under tool_choice required and auto', () => {
  it('required: every output is one or more calls, each valid for its tool (temperature 1)', async () => {
    const names = new Set<string>();
    let completed = 0;
    for (let seed = 0; seed < 8; seed++) {
      const response = await sampled([LOOKUP, TICKET, SHELL], 'required', seed, 120);
      // A call cut by max_output_tokens is incomplete, not invalid.
      if (response.status !== 'completed') continue;
      completed += 1;
      expect(response.output.every((item) => item.type === 'custom_tool_call' || item.type === 'function_call' || item.type === 'reasoning')).toBe(true);
      expect(expectCallsValid(response.output)).toBeGreaterThan(0);
      for (const item of response.output) if (item.type !== 'reasoning') names.add((item as { name: string }).name);
    }
    expect(completed).toBeGreaterThanOrEqual(6);
    // Over the seeds, the random model chose custom tools, not only the function.
    expect([...names].some((name) => name === 'ticket' || name === 'shell')).toBe(true);
  });

  it('required, streamed: the custom input events carry the valid input', async () => {
    for (let seed = 0; seed < 3; seed++) {
      const stream = await llm.client.responses.create({
        model: 'qwen3',
        input,
        tools: [TICKET, SHELL],
        tool_choice: 'required',
        parallel_tool_calls: false,
        temperature: 1,
        seed,
        max_output_tokens: 120,
        stream: true,
      } as OpenAI.Responses.ResponseCreateParamsStreaming);
      const done: string[] = [];
      let completed: OpenAI.Responses.Response | null = null;
      for await (const event of stream) {
        if (event.type === 'response.custom_tool_call_input.done') done.push(event.input);
        if (event.type === 'response.completed') completed = event.response;
      }
      expect(completed).not.toBeNull();
      expect(expectCallsValid(completed!.output)).toBe(1);
      const call = completed!.output.find((item) => item.type === 'custom_tool_call') as CustomCall;
      expect(done).toEqual([call.input]);
    }
  });

  it('auto: the model may answer text, and a call it opens holds to its tool (temperature 1)', async () => {
    const create = (seed: number, bias: Record<number, number>, max: number) => sampled([TICKET, SHELL, LOOKUP], 'auto', seed, max, { parallel_tool_calls: false, logit_bias: bias });
    // Left alone, the random model writes text: still an answer.
    for (let seed = 0; seed < 2; seed++) {
      const response = await create(seed, {}, 16);
      expect(response.output.map((item) => item.type).filter((type) => type !== 'reasoning')).toEqual(['message']);
    }
    // Pushed to open a call, it calls one tool, whose input or arguments hold.
    const names = new Set<string>();
    for (let seed = 0; seed < 6; seed++) {
      const response = await create(seed, { [TOOL_CALL_TOKEN]: 100 }, 120);
      expect(response.status).toBe('completed');
      expect(expectCallsValid(response.output)).toBe(1);
      for (const item of response.output) if (item.type === 'custom_tool_call') names.add(item.name);
    }
    expect(names.size).toBeGreaterThan(0);
  });
});

describe('history and refusals', () => {
  it('takes custom_tool_call and custom_tool_call_output items as history', async () => {
    const response = await llm.client.responses.create({
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
    const response = await fetch(`${llm.server.http}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'qwen3', input, ...body }) });
    return { status: response.status, error: ((await response.json()) as { error: Record<string, unknown> }).error };
  };
  const lark = (definition: string) => ({ tools: [{ type: 'custom', name: 'g', format: { type: 'grammar', syntax: 'lark', definition } }], tool_choice: { type: 'custom', name: 'g' } });

  it('refuses Lark the engine cannot enforce, naming the definition and the construct', async () => {
    for (const [definition, construct] of [
      ['start: ESCAPED_STRING\n%import common.ESCAPED_STRING', '%import'],
      ['start: "ls"i', 'case-insensitive'],
      ['start: /a(?=b)b/', 'lookaround'],
      ['start: x', 'undefined rule x'],
    ] as const) {
      const { status, error } = await refused(lark(definition));
      expect(status).toBe(400);
      expect(error).toMatchObject({ param: 'tools[0].format.definition', code: 'unsupported_parameter' });
      expect(error.message).toContain(construct);
    }
    // Under required and auto too, where the call's input is held to it.
    for (const tool_choice of ['required', 'auto']) {
      const { status, error } = await refused({ ...lark('start: "ls"i'), tool_choice });
      expect(status).toBe(400);
      expect(error).toMatchObject({ param: 'tools[0].format.definition', code: 'unsupported_parameter' });
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
