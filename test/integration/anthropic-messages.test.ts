// The Anthropic Messages API through the real server and the official @anthropic-ai/sdk: create
// (system, multi-turn, stop_sequences, max_tokens), the event stream compared field by field
// with Anthropic's documented sequence and accumulated by the SDK to exactly the non-streamed
// message, tools (tool_choice any and tool are constrained by the engine's grammar, so every
// tool_use input is valid under its input_schema whatever the random weights), a tool_result
// history rendered by the model's own template, count_tokens, x-api-key beside Bearer, and bad
// input answered in Anthropic's error shape with the SDK's error classes, a mid-stream failure (an engine
// made to crash) as an `error` event. The server runs with an
// API key, so every request here also proves the key is taken.

import Anthropic, { AuthenticationError, BadRequestError, NotFoundError } from '@anthropic-ai/sdk';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messagesPrompt } from '../../anthropic-compat/request.js';
import { messagesToolPlan } from '../../anthropic-compat/tools.js';
import type { SequenceUpdate } from '../../src/contracts/generate.js';
import { FAULT_INJECTION_ENV } from '../../src/threads/fault-injection.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const KEY = 'sk-anthropic-test-key';
let server: TestServer;
let client: Anthropic;

beforeAll(async () => {
  // The reasoner's output starts inside a thinking block (deepseek_r1), which the random weights never close by themselves.
  const reasoner = (text: string) => `${text}parameters: { key: "reasoning_parser" value: { string_value: "deepseek_r1" } }\n`;
  // The crashy engine throws at its 20th step (test-only fault injection), mid-way through the first stream it serves.
  process.env[FAULT_INJECTION_ENV] = '1';
  const crashy = (text: string) => `${text}parameters: { key: "fault_injection" value: { string_value: "throw_at_step:20" } }\n`;
  const repository = await makeRepository([
    { name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') },
    { name: 'reasoner', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'reasoner', reasoner) },
    { name: 'crashy', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'crashy', crashy) },
  ]);
  server = await startTestServer(repository, ['--api-key', KEY]);
  client = new Anthropic({ baseURL: server.http, apiKey: KEY, maxRetries: 0 });
}, 120_000);
afterAll(async () => {
  delete process.env[FAULT_INJECTION_ENV];
  await server?.stop();
});

const base = { model: 'qwen3', max_tokens: 16, temperature: 0, messages: [{ role: 'user' as const, content: 'Say something.' }] };
const withoutId = ({ id: _, ...rest }: Anthropic.Message) => rest;
const textOf = (message: Anthropic.Message): string => message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');

describe('messages.create', () => {
  it('answers in the Message shape, with usage whose input counters add up to count_tokens', async () => {
    const message = await client.messages.create({ ...base, system: 'You are terse.' });
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: 'qwen3', stop_sequence: null });
    expect(message.id).toMatch(/^msg_/);
    expect(['end_turn', 'max_tokens']).toContain(message.stop_reason);
    expect(message.content.every((b) => b.type === 'text')).toBe(true);
    const { usage } = message;
    expect(usage.output_tokens).toBeGreaterThan(0);
    expect(usage.cache_creation_input_tokens).toBe(0);
    const counted = await client.messages.countTokens({ model: 'qwen3', system: 'You are terse.', messages: base.messages });
    expect(usage.input_tokens + usage.cache_read_input_tokens!).toBe(counted.input_tokens);
  });

  it('renders system (string or text blocks) and earlier turns into the prompt', async () => {
    const plain = await client.messages.countTokens({ model: 'qwen3', messages: base.messages });
    const system = await client.messages.countTokens({ model: 'qwen3', system: 'You are terse.', messages: base.messages });
    const blocks = await client.messages.countTokens({ model: 'qwen3', system: [{ type: 'text', text: 'You are terse.' }], messages: base.messages });
    expect(system.input_tokens).toBeGreaterThan(plain.input_tokens);
    expect(blocks.input_tokens).toBe(system.input_tokens);
    const turns: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Hello there.' },
      { role: 'assistant', content: [{ type: 'text', text: 'Hi! How can I help?' }] },
      { role: 'user', content: [{ type: 'text', text: 'Say something.' }] },
    ];
    const multi = await client.messages.create({ ...base, messages: turns });
    expect(multi.usage.input_tokens + multi.usage.cache_read_input_tokens!).toBeGreaterThan(plain.input_tokens + 10);
  });

  it('max_tokens cuts the answer with stop_reason max_tokens', async () => {
    const message = await client.messages.create({ ...base, max_tokens: 3 });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(3);
  });

  it('stop_sequences end the answer before the sequence, with stop_reason stop_sequence', async () => {
    const free = await client.messages.create({ ...base, max_tokens: 24 });
    const text = textOf(free);
    // A piece from the middle of the greedy answer: the same answer must stop right before it.
    const at = Math.floor(text.length / 2);
    expect(text.length, `greedy text too short to cut: ${JSON.stringify(text)}`).toBeGreaterThan(8);
    const sequence = text.slice(at, at + 2);
    const cut = await client.messages.create({ ...base, max_tokens: 24, stop_sequences: [sequence] });
    expect(cut.stop_reason).toBe('stop_sequence');
    expect(cut.stop_sequence).toBe(sequence);
    expect(textOf(cut)).toBe(text.slice(0, text.indexOf(sequence)));
  });
});

describe('messages.stream', () => {
  it("sends Anthropic's event sequence on the wire, field by field", async () => {
    // Read raw: the SDK's iterator drops ping events.
    const response = await fetch(`${server.http}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ ...base, stream: true }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('request-id')).toMatch(/^req_/);
    const frames = (await response.text()).split('\n\n').filter((f) => f !== '');
    const events = frames.map((frame) => {
      const [name, data] = frame.split('\n') as [string, string];
      const event = JSON.parse(data.slice('data: '.length)) as Anthropic.RawMessageStreamEvent;
      // Each frame is named by its event's own type, and the data is the compact serialization.
      expect(frame).toBe(`event: ${event.type}\ndata: ${JSON.stringify(event)}`);
      expect(name).toBe(`event: ${event.type}`);
      return event;
    });
    const types = events.map((e) => e.type as string);
    // message_start, content_block_start, ping, deltas…, content_block_stop, message_delta, message_stop.
    expect(types.slice(0, 3)).toEqual(['message_start', 'content_block_start', 'ping']);
    expect(events[2]).toEqual({ type: 'ping' });
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(types.slice(3, -3).every((t) => t === 'content_block_delta')).toBe(true);
    const [start, blockStart] = events as [Anthropic.RawMessageStartEvent, Anthropic.RawContentBlockStartEvent];
    expect(Object.keys(start.message).sort()).toEqual(['content', 'id', 'model', 'role', 'stop_reason', 'stop_sequence', 'type', 'usage']);
    expect(start.message).toMatchObject({ type: 'message', role: 'assistant', model: 'qwen3', content: [], stop_reason: null, stop_sequence: null, usage: { output_tokens: 0 } });
    expect(start.message.usage.input_tokens).toBeGreaterThan(0);
    expect(blockStart).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    for (const delta of events.slice(3, -3)) expect(delta).toEqual({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: expect.any(String) } });
    expect(events.at(-3)).toEqual({ type: 'content_block_stop', index: 0 });
    const messageDelta = events.at(-2) as Anthropic.RawMessageDeltaEvent;
    expect(messageDelta.delta).toEqual({ stop_reason: expect.stringMatching(/^(end_turn|max_tokens)$/), stop_sequence: null });
    expect(messageDelta.usage.output_tokens).toBeGreaterThan(0);
    expect(events.at(-1)).toEqual({ type: 'message_stop' });
  });

  it("a failure after the stream opened is an error event in Anthropic's shape, with no message_stop", async () => {
    const response = await fetch(`${server.http}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ ...base, model: 'crashy', max_tokens: 2000, stream: true }),
    });
    expect(response.status).toBe(200);
    const frames = (await response.text()).split('\n\n').filter((f) => f !== '');
    expect(frames[0]).toMatch(/^event: message_start\n/);
    const last = frames.at(-1)!;
    expect(last).toMatch(/^event: error\ndata: /);
    expect(JSON.parse(last.split('\n')[1]!.slice('data: '.length))).toEqual({ type: 'error', error: { type: 'overloaded_error', message: expect.stringMatching(/crashed/) } });
    expect(frames.some((f) => f.startsWith('event: message_stop'))).toBe(false);
  });

  it("the SDK's finalMessage equals the non-streamed message", async () => {
    const whole = await client.messages.create(base);
    const streamed = await client.messages.stream(base).finalMessage();
    // Usage aside from the prefix-cache split, which depends on what ran before.
    // The SDK adds parsed_output and stop_details to what it accumulates; neither is on the wire.
    const comparable = (m: Anthropic.Message) => {
      const { parsed_output: _, stop_details: __, ...rest } = withoutId(m) as Omit<Anthropic.Message, 'id'> & { parsed_output?: unknown };
      return { ...rest, usage: { output: m.usage.output_tokens, input: m.usage.input_tokens + m.usage.cache_read_input_tokens! } };
    };
    expect(comparable(streamed)).toEqual(comparable(whole));
  });

  it('a client that goes away aborts the generation and frees its KV blocks', async () => {
    const model = server.service.llmModel('qwen3');
    const ended: SequenceUpdate[] = [];
    model.engine.onStep((step) => ended.push(...step.updates.filter((u) => u.finishReason !== null)));
    const controller = new AbortController();
    const stream = client.messages.stream({ ...base, max_tokens: 2000 }, { signal: controller.signal });
    await new Promise<void>((resolve) => stream.once('text', () => resolve()));
    expect(model.engine.numActive).toBe(1);
    controller.abort();
    await stream.done().catch(() => undefined);
    await expect.poll(() => ended.length, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(ended[0]!.finishReason).toBe('abort');
    await expect.poll(() => model.engine.numActive === 0 && (model.engine.stats?.kvCacheUsage ?? 0) === 0, { timeout: 30_000 }).toBe(true);
  });
});

const smallTools: Anthropic.Tool[] = [
  {
    name: 'set_mode',
    description: 'Switch the mode',
    input_schema: {
      type: 'object',
      properties: { mode: { type: 'string', enum: ['on', 'off'] }, level: { type: 'integer', minimum: 0, maximum: 3 } },
      required: ['mode', 'level'],
      additionalProperties: false,
    },
  },
  { name: 'ping', input_schema: { type: 'object', properties: { loud: { type: 'boolean' } }, required: ['loud'], additionalProperties: false } },
];
const ajv = new Ajv();
const validators = new Map(smallTools.map((t) => [t.name, ajv.compile(t.input_schema)]));

function expectValidToolUses(message: Anthropic.Message, allowed: readonly string[]): Anthropic.ToolUseBlock[] {
  expect(message.stop_reason).toBe('tool_use');
  const uses = message.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
  expect(uses.length).toBeGreaterThan(0);
  for (const use of uses) {
    expect(use.id).toMatch(/^toolu_[A-Za-z0-9]{24}$/);
    expect(allowed).toContain(use.name);
    const validate = validators.get(use.name)!;
    expect(validate(use.input), `${JSON.stringify(use.input)}: ${JSON.stringify(validate.errors)}`).toBe(true);
  }
  return uses;
}

describe('tools', () => {
  const ask = { model: 'qwen3', max_tokens: 120, messages: [{ role: 'user' as const, content: 'Turn it on.' }], tools: smallTools };
  // The SDK's types no longer list the sampling fields; the API (and this server) still take them.
  const greedy = { temperature: 0 };

  it('tool_choice any: a tool_use block with input valid under its input_schema', async () => {
    for (const seed of [1, 2]) {
      const sampled = { temperature: 1, top_k: 50 + seed };
      const message = await client.messages.create({ ...ask, ...sampled, tool_choice: { type: 'any', disable_parallel_tool_use: true } });
      expect(expectValidToolUses(message, ['set_mode', 'ping'])).toHaveLength(1);
    }
  });

  it('tool_choice tool: the named tool, and the stream accumulates (SDK) to the same tool_use', async () => {
    const body = { ...ask, ...greedy, tool_choice: { type: 'tool' as const, name: 'set_mode' } };
    const whole = await client.messages.create(body);
    const [use] = expectValidToolUses(whole, ['set_mode']);
    const stream = client.messages.stream(body);
    const events: string[] = [];
    stream.on('streamEvent', (event) => events.push(event.type === 'content_block_delta' ? event.delta.type : event.type));
    const streamed = await stream.finalMessage();
    expect(events).toContain('input_json_delta');
    const [streamedUse] = expectValidToolUses(streamed, ['set_mode']);
    expect(streamedUse!.input).toEqual(use!.input);
    expect(streamedUse!.name).toBe(use!.name);
  });

  it("tool_choice auto reads calls with the model's parser; none shows the tools but reads no calls", async () => {
    const plain = await client.messages.countTokens({ model: 'qwen3', messages: ask.messages });
    for (const type of ['auto', 'none'] as const) {
      const message = await client.messages.create({ ...ask, ...greedy, max_tokens: 16, tool_choice: { type } });
      expect(message.usage.input_tokens + message.usage.cache_read_input_tokens!).toBeGreaterThan(plain.input_tokens + 50);
      expect(['end_turn', 'max_tokens', 'tool_use']).toContain(message.stop_reason);
      if (type === 'none') expect(message.content.every((b) => b.type === 'text')).toBe(true);
      if (message.stop_reason === 'tool_use') expectValidToolUses(message, ['set_mode', 'ping']);
    }
  });

  it('a tool_result round trip is rendered by the template as the tool response to the call', async () => {
    const history: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Turn it on.' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Switching.' },
          { type: 'tool_use', id: 'toolu_1', name: 'set_mode', input: { mode: 'on', level: 2 } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'mode is now on' }] },
          { type: 'text', text: 'Thanks.' },
        ],
      },
    ];
    const body = { model: 'qwen3', tools: smallTools, messages: history };
    const model = server.service.llmModel('qwen3');
    const prompt = messagesPrompt(body, messagesToolPlan(body, model));
    const rendered = prompt.kind === 'chat' ? model.processor.applyChatTemplate(prompt.messages, prompt) : '';
    expect(rendered).toContain('<tool_call>\n{"name": "set_mode", "arguments": {"mode":"on","level":2}}\n</tool_call>');
    expect(rendered).toContain('<|im_start|>user\n<tool_response>\nmode is now on\n</tool_response><|im_end|>\n<|im_start|>user\nThanks.<|im_end|>');
    const answer = await client.messages.create({ ...body, max_tokens: 8, ...greedy });
    const counted = await client.messages.countTokens(body);
    expect(answer.usage.input_tokens + answer.usage.cache_read_input_tokens!).toBe(counted.input_tokens);
    const { tokenIds } = await model.processor.tokenizeAsync(prompt);
    expect(counted.input_tokens).toBe(tokenIds.length);
  });
});

describe('output_config', () => {
  it('format (a JSON Schema) constrains the answer: its text parses and is valid under the schema', async () => {
    const schema = {
      type: 'object',
      properties: { mode: { type: 'string', enum: ['on', 'off'] }, level: { type: 'integer', minimum: 0, maximum: 3 } },
      required: ['mode', 'level'],
      additionalProperties: false,
    };
    const message = await client.messages.create({ ...base, max_tokens: 120, output_config: { format: { type: 'json_schema', schema }, effort: 'low' } });
    expect(message.stop_reason).toBe('end_turn');
    const validate = new Ajv().compile(schema);
    expect(validate(JSON.parse(textOf(message)))).toBe(true);
  });

  it('a format that is no JSON Schema object is a 400 naming output_config.format', async () => {
    const error = await client.messages.create({ ...base, output_config: { format: { type: 'json_schema' } } } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).error).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringMatching(/output_config\.format/) } });
  });
});

describe('thinking', () => {
  const body = { model: 'reasoner', max_tokens: 12, thinking: { type: 'enabled' as const, budget_tokens: 8 }, messages: base.messages, temperature: 0 };

  it('the thinking block comes back as a thinking block, never as text', async () => {
    const message = await client.messages.create(body);
    const [first, ...rest] = message.content;
    expect(first).toEqual({ type: 'thinking', thinking: expect.stringMatching(/\S/), signature: '' });
    // The engine closes the block once budget_tokens are spent; what follows is the answer's text.
    expect(rest.every((b) => b.type === 'text')).toBe(true);
    expect(message.usage.output_tokens_details).toEqual({ thinking_tokens: 8 });
    expect(message.usage.output_tokens).toBeGreaterThan(8);
  });

  it('streams thinking_delta events, and the SDK accumulates the same message', async () => {
    const whole = await client.messages.create(body);
    const stream = client.messages.stream(body);
    const deltas: string[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'content_block_delta') deltas.push(event.delta.type);
    });
    const streamed = await stream.finalMessage();
    expect(deltas).toContain('thinking_delta');
    expect(streamed.content).toEqual(whole.content);
    expect(streamed.stop_reason).toBe(whole.stop_reason);
    expect(streamed.usage.output_tokens_details).toEqual(whole.usage.output_tokens_details);
  });

  it('thinking disabled and adaptive are accepted; thinking blocks in history are taken', async () => {
    for (const thinking of [{ type: 'disabled' as const }, { type: 'adaptive' as const }]) await expect(client.messages.create({ ...body, thinking })).resolves.toMatchObject({ type: 'message' });
    const history: Anthropic.MessageParam[] = [
      ...base.messages,
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'They want words.', signature: '' },
          { type: 'text', text: 'Words.' },
        ],
      },
      { role: 'user', content: 'More.' },
    ];
    await expect(client.messages.create({ ...body, messages: history })).resolves.toMatchObject({ type: 'message' });
  });
});

describe('auth', () => {
  it('takes the key as x-api-key (with anthropic-version) as well as Bearer', async () => {
    const viaHeader = new Anthropic({ baseURL: server.http, apiKey: null, authToken: null, defaultHeaders: { 'x-api-key': KEY }, maxRetries: 0 });
    await expect(viaHeader.messages.countTokens({ model: 'qwen3', messages: base.messages })).resolves.toMatchObject({ input_tokens: expect.any(Number) });
    const response = await fetch(`${server.http}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'qwen3', messages: base.messages }),
    });
    expect(response.status).toBe(200);
  });

  it('a wrong or missing key is 401 authentication_error in Anthropic’s shape', async () => {
    const wrong = new Anthropic({ baseURL: server.http, apiKey: null, authToken: null, defaultHeaders: { 'x-api-key': 'nope' }, maxRetries: 0 });
    const error = await wrong.messages.create(base).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect((error as AuthenticationError).error).toEqual({ type: 'error', error: { type: 'authentication_error', message: 'Incorrect API key provided.' } });
    const missing = await fetch(`${server.http}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(base) });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });
});

describe('bad input', () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    ['no max_tokens', { max_tokens: undefined }, /max_tokens/],
    ['an unknown field', { frequency_penalty: 1 }, /frequency_penalty/],
    ['a bad temperature', { temperature: -1 }, /temperature/],
    ['a user role other than user/assistant', { messages: [{ role: 'system', content: 'x' }] }, /messages\.0\.role/],
    ['an image block', { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }] }] }, /messages\.0\.content\.0\.type/],
    ['a tool_choice naming no tool', { tools: smallTools, tool_choice: { type: 'tool', name: 'other' } }, /tool_choice/],
    ['a tool without input_schema', { tools: [{ name: 'f' }] }, /tools\.0\.input_schema/],
    ['a bad tool name', { tools: [{ name: 'bad name', input_schema: { type: 'object' } }] }, /tools\.0\.name/],
    ['thinking budget not below max_tokens', { thinking: { type: 'enabled', budget_tokens: 16 } }, /thinking\.budget_tokens/],
    ['a final assistant message', { messages: [...base.messages, { role: 'assistant', content: 'Sure' }] }, /prefill/],
  ])('refuses %s: BadRequestError, invalid_request_error naming the field', async (_, extra, names) => {
    const error = await client.messages.create({ ...base, ...extra } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    const body = (error as BadRequestError).error as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toMatch(names);
  });

  it('an unknown model is NotFoundError (404 not_found_error), streamed or not', async () => {
    for (const stream of [false, true]) {
      const error = await client.messages.create({ ...base, model: 'nope', stream } as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    }
  });

  it('malformed JSON is a 400 in the same shape', async () => {
    const response = await fetch(`${server.http}/v1/messages`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: '{"model":' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });
});
