// Tools through the real server and the official SDK. The random-weight tiny model does not
// choose to call tools, so these tests pin what holds for any output: the checks on the tool
// fields, tools reaching the prompt, the response shapes, and streaming accumulating (by the
// SDK's own helper) to exactly the non-streaming answer; tool_choice required and named are
// constrained by the engine's grammar, so their calls are valid whatever the weights. The reading of real call text is
// tested on the route layer (test/unit/openai-compat/tool-calls.test.ts).

import { Ajv } from 'ajv';
import OpenAI, { BadRequestError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let client: OpenAI;

beforeAll(async () => {
  const withoutParser = (text: string) => text.replace(/^parameters: \{ key: "tool_call_parser".*\n/m, '');
  const repository = await makeRepository([
    { name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') },
    { name: 'plain', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'plain', withoutParser) },
  ]);
  server = await startTestServer(repository);
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 120_000);
afterAll(async () => server?.stop());

const tools: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
];
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
const greedy = { model: 'qwen3', messages, temperature: 0, max_tokens: 12 } as const;

describe('tool fields', () => {
  it.each<[string, Record<string, unknown>, string, string | null]>([
    ['an invalid function name', { tools: [{ type: 'function', function: { name: 'get weather' } }] }, 'tools[0].function.name', null],
    [
      'a parameters schema that does not compile',
      { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 1 } } } } }] },
      'tools[0].function.parameters',
      null,
    ],
    ['a tool_choice naming no given tool', { tools, tool_choice: { type: 'function', function: { name: 'other' } } }, 'tool_choice', null],
    ['tool_choice required without tools', { tool_choice: 'required' }, 'tool_choice', null],
    ['tool_choice required with response_format', { tools, tool_choice: 'required', response_format: { type: 'json_object' } }, 'tool_choice', null],
    [
      'a named tool_choice with a structured_outputs constraint',
      { tools, tool_choice: { type: 'function', function: { name: 'get_weather' } }, structured_outputs: { choice: ['a'] } },
      'tool_choice',
      null,
    ],
  ])('refuses %s with a 400 naming the field', async (_, extra, param, code) => {
    const error = await client.chat.completions.create({ ...greedy, ...extra } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, param, code, type: 'invalid_request_error' });
  });

  it('names both fields when tool_choice required meets response_format, and lets auto or none through', async () => {
    const error = (await client.chat.completions.create({ ...greedy, tools, tool_choice: 'required', response_format: { type: 'json_object' } }).catch((e: unknown) => e)) as BadRequestError;
    expect(error.message).toMatch(/tool_choice cannot be combined with response_format/);
    // auto and none add no constraint of their own, so response_format alone constrains.
    for (const choice of ['auto', 'none'] as const) {
      const completion = await client.chat.completions.create({ ...greedy, tools, tool_choice: choice, response_format: { type: 'json_object' } });
      expect(['stop', 'length', 'tool_calls']).toContain(completion.choices[0]!.finish_reason);
    }
  });

  it('refuses tool_choice auto for a model with no tool_call_parser, naming tools', async () => {
    const error = await client.chat.completions.create({ ...greedy, model: 'plain', tools }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, param: 'tools' });
    // tool_choice none reads nothing, so it needs no parser.
    await expect(client.chat.completions.create({ ...greedy, model: 'plain', tools, tool_choice: 'none' })).resolves.toBeDefined();
  });
});

describe('tool_choice auto', () => {
  it('renders the tools into the prompt and answers in the chat.completion shape', async () => {
    const plain = await client.chat.completions.create(greedy);
    const answer = await client.chat.completions.create({ ...greedy, tools });
    expect(answer.usage!.prompt_tokens).toBeGreaterThan(plain.usage!.prompt_tokens + 50);
    const choice = answer.choices[0]!;
    expect(['stop', 'length', 'tool_calls']).toContain(choice.finish_reason);
    expect(choice.message.role).toBe('assistant');
    for (const call of choice.message.tool_calls ?? []) expect(call.id).toMatch(/^call_/);
    if (choice.finish_reason === 'tool_calls') expect(choice.message.tool_calls!.length).toBeGreaterThan(0);
  });

  it('streams, and the SDK stream helper accumulates exactly the non-streaming answer', async () => {
    const whole = await client.chat.completions.create({ ...greedy, tools });
    const stream = client.chat.completions.stream({ ...greedy, tools });
    const streamed = await stream.finalChatCompletion();
    const strip = (m: OpenAI.ChatCompletionMessage) => ({ content: m.content ?? null, calls: (m.tool_calls ?? []).map((c) => c.type === 'function' && c.function) });
    expect(strip(streamed.choices[0]!.message)).toEqual(strip(whole.choices[0]!.message));
    expect(streamed.choices[0]!.finish_reason).toBe(whole.choices[0]!.finish_reason);
  });

  it('takes a history with assistant tool_calls and tool results', async () => {
    const history: OpenAI.ChatCompletionMessageParam[] = [
      ...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '21C and sunny' },
    ];
    const answer = await client.chat.completions.create({ ...greedy, messages: history, tools });
    const first = await client.chat.completions.create({ ...greedy, tools });
    expect(answer.usage!.prompt_tokens).toBeGreaterThan(first.usage!.prompt_tokens + 10);
  });

  // Small argument schemas (enums, booleans, small integers) let the random model finish a call in a few tokens.
  const smallTools: OpenAI.ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'set_mode',
        parameters: {
          type: 'object',
          properties: { mode: { type: 'string', enum: ['on', 'off'] }, level: { type: 'integer', minimum: 0, maximum: 3 } },
          required: ['mode', 'level'],
          additionalProperties: false,
        },
      },
    },
    { type: 'function', function: { name: 'ping', parameters: { type: 'object', properties: { loud: { type: 'boolean' } }, required: ['loud'], additionalProperties: false } } },
  ];
  const ajv = new Ajv();
  const validators = new Map(smallTools.map((t) => [t.type === 'function' ? t.function.name : '', ajv.compile(t.type === 'function' ? t.function.parameters! : {})]));
  const expectValidCalls = (message: OpenAI.ChatCompletionMessage, allowed: readonly string[]): void => {
    expect(message.tool_calls?.length).toBeGreaterThan(0);
    for (const call of message.tool_calls!) {
      expect(call.type).toBe('function');
      if (call.type !== 'function') continue;
      expect(allowed).toContain(call.function.name);
      const validate = validators.get(call.function.name)!;
      expect(validate(JSON.parse(call.function.arguments)), `${call.function.arguments}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  };

  it('tool_choice required: every output is a call to an allowed function with schema-valid arguments', async () => {
    for (const seed of [1, 2, 3]) {
      const completion = await client.chat.completions.create({ model: 'qwen3', messages, tools: smallTools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 120, seed });
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe('tool_calls');
      expectValidCalls(choice.message, ['set_mode', 'ping']);
      expect(choice.message.tool_calls).toHaveLength(1);
    }
  });

  it('tool_choice required with generated parameters ($defs / $ref, as pydantic writes them) and long bounds: compiled at once, the calls valid', async () => {
    const parameters = {
      $defs: { Tag: { type: 'string', minLength: 1, maxLength: 12 } },
      type: 'object',
      properties: { note: { type: 'string', maxLength: 2000 }, tags: { type: 'array', items: { $ref: '#/$defs/Tag' }, uniqueItems: true, maxItems: 3 } },
      required: ['note', 'tags'],
      additionalProperties: false,
    };
    const validate = new Ajv().compile(parameters);
    const noteTools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'save_note', parameters } }];
    for (const seed of [1, 2]) {
      const completion = await client.chat.completions.create({ model: 'qwen3', messages, tools: noteTools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 600, seed });
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe('tool_calls');
      const call = choice.message.tool_calls![0]!;
      expect(call.type === 'function' && call.function.name).toBe('save_note');
      const args = call.type === 'function' ? JSON.parse(call.function.arguments) : null;
      expect(validate(args), `${JSON.stringify(args)}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it('a named function: the call is to it, and streaming accumulates (SDK helper) to the same call', async () => {
    const body = { model: 'qwen3', messages, tools: smallTools, tool_choice: { type: 'function', function: { name: 'set_mode' } }, max_tokens: 120, temperature: 0 } as const;
    const completion = await client.chat.completions.create(body);
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    expectValidCalls(completion.choices[0]!.message, ['set_mode']);
    const streamed = await client.chat.completions.stream(body).finalChatCompletion();
    expectValidCalls(streamed.choices[0]!.message, ['set_mode']);
    expect(streamed.choices[0]!.message.tool_calls![0]!.type === 'function' && streamed.choices[0]!.message.tool_calls![0]!.function.arguments).toBe(
      completion.choices[0]!.message.tool_calls![0]!.type === 'function' && completion.choices[0]!.message.tool_calls![0]!.function.arguments,
    );
  });
});
