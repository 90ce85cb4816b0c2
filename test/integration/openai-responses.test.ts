// /v1/responses through the real server and the official SDK (client.responses.create,
// .stream, .retrieve, .inputItems.list, .delete, .cancel). The random-weight tiny model writes
// gibberish, so what is pinned holds for any output: the response shape field by field, the
// event sequence of a stream (every documented event in order, sequence numbers 0..n, deltas
// adding up to the .done texts, the final response equal in shape to the non-streamed one),
// text.format json_schema and tool_choice required / named constrained by the engine's grammar
// so their JSON and function calls are valid whatever the weights, previous_response_id carrying
// the conversation into the prompt, the store's routes, and 400s naming the field at fault.

import { request as httpRequest } from 'node:http';
import { Ajv } from 'ajv';
import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let client: OpenAI;
let model: LlmModel;

beforeAll(async () => {
  // deepseek_r1 reads the output as inside the thinking block from its first token: the random model's text is all reasoning.
  const thinker = (text: string) => `${text}\nparameters: { key: "reasoning_parser" value: { string_value: "deepseek_r1" } }\n`;
  const repository = await makeRepository([
    { name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') },
    { name: 'thinker', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'thinker', thinker) },
  ]);
  server = await startTestServer(repository, ['--responses-store-size', '8']);
  model = server.service.llmModel('qwen3');
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 120_000);
afterAll(async () => server?.stop());

const base = { model: 'qwen3', temperature: 0, max_output_tokens: 8 } as const;
type CreateParams = OpenAI.Responses.ResponseCreateParamsNonStreaming;
/** A request with vLLM's sampling extensions (max_thinking_tokens, ignore_eos), which the SDK's types do not list. */
const extended = (params: CreateParams, extensions: Readonly<Record<string, number | boolean>>): CreateParams => ({ ...params, ...extensions });
const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather now',
  parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } }, required: ['city'], additionalProperties: false },
  strict: true,
} as const;

describe('responses.create', () => {
  it('answers a string input with a response object in the documented shape', async () => {
    const response = await client.responses.create({ ...base, input: 'Hello there', metadata: { run: 'a' }, user: 'u1' });
    expect(response.id).toMatch(/^resp_[0-9a-f]{48}$/);
    expect(response).toMatchObject({
      object: 'response',
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      model: 'qwen3',
      error: null,
      instructions: null,
      max_output_tokens: 8,
      metadata: { run: 'a' },
      parallel_tool_calls: true,
      previous_response_id: null,
      store: true,
      temperature: 0,
      text: { format: { type: 'text' } },
      tool_choice: 'auto',
      tools: [],
      user: 'u1',
    });
    expect(response.created_at).toBeGreaterThan(1_700_000_000);
    expect(response.output).toHaveLength(1);
    const message = response.output[0]!;
    expect(message).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      status: 'incomplete',
      role: 'assistant',
      content: [{ type: 'output_text', text: expect.any(String), annotations: [], logprobs: [] }],
    });
    // The SDK's helper reads the message parts.
    expect(response.output_text).toBe((message as OpenAI.Responses.ResponseOutputMessage).content.map((c) => (c.type === 'output_text' ? c.text : '')).join(''));
    expect(response.usage).toEqual({
      input_tokens: expect.any(Number),
      input_tokens_details: { cached_tokens: expect.any(Number) },
      output_tokens: 8,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: response.usage!.input_tokens + 8,
    });
  });

  it('renders instructions and item history (function_call, function_call_output) into the prompt', async () => {
    const plain = await client.responses.create({ ...base, input: 'Weather in Paris?' });
    const withInstructions = await client.responses.create({ ...base, input: 'Weather in Paris?', instructions: 'Answer in French.' });
    expect(withInstructions.instructions).toBe('Answer in French.');
    expect(withInstructions.usage!.input_tokens).toBeGreaterThan(plain.usage!.input_tokens);
    const history: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '{"temperature":21}' },
    ];
    const followed = await client.responses.create({ ...base, input: history, tools: [weather] });
    expect(followed.status).toBe('incomplete');
    const tokens = await promptTokens([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temperature":21}' },
    ]);
    // The same conversation as chat messages renders to the same prompt.
    expect(followed.usage!.input_tokens).toBe(tokens);
  });

  it('constrains text.format json_schema: the output parses and satisfies the schema', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' }, size: { type: 'string', enum: ['s', 'm'] } }, required: ['ok', 'size'], additionalProperties: false };
    const response = await client.responses.create({ ...base, max_output_tokens: 60, input: 'Give me JSON', text: { format: { type: 'json_schema', name: 'answer', schema, strict: true } } });
    expect(response.status).toBe('completed');
    expect(response.text).toMatchObject({ format: { type: 'json_schema', name: 'answer' } });
    const parsed: unknown = JSON.parse(response.output_text);
    expect(new Ajv().validate(schema, parsed)).toBe(true);
  });

  it.each([
    ['required', 'required' as const],
    ['named', { type: 'function', name: 'get_weather' } as const],
  ])('answers tool_choice %s with function_call items whose arguments fit the schema', async (_, choice) => {
    const response = await client.responses.create({ ...base, max_output_tokens: 120, input: 'Weather in Paris?', tools: [weather], tool_choice: choice, parallel_tool_calls: false });
    expect(response.status).toBe('completed');
    const calls = response.output.filter((item) => item.type === 'function_call');
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    expect(call).toEqual({
      id: expect.stringMatching(/^fc_/),
      type: 'function_call',
      status: 'completed',
      call_id: expect.stringMatching(/^call_/),
      name: 'get_weather',
      arguments: expect.any(String),
    });
    expect(new Ajv().validate(weather.parameters, JSON.parse(call.arguments))).toBe(true);
    expect(response.tools).toEqual([weather]);
    expect(response.tool_choice).toEqual(choice);
  });
});

/** Prompt tokens of a chat request with the same messages, through the chat route. */
async function promptTokens(messages: OpenAI.ChatCompletionMessageParam[]): Promise<number> {
  const completion = await client.chat.completions.create({
    model: 'qwen3',
    messages,
    max_tokens: 1,
    tools: [{ type: 'function', function: { name: weather.name, description: weather.description, parameters: weather.parameters, strict: true } }],
  });
  return completion.usage!.prompt_tokens;
}

type StreamEvent = OpenAI.Responses.ResponseStreamEvent;

/** Ids and clocks differ between two runs of the same request; everything else must match. The stream helper adds its own parsed fields. */
function comparable(value: unknown): unknown {
  const varies = ['id', 'item_id', 'call_id', 'created_at', 'completed_at'];
  return JSON.parse(JSON.stringify(value), (key, v: unknown) => (varies.includes(key) ? '<varies>' : key === 'parsed' || key === 'output_parsed' ? undefined : v));
}

/** The documented order of one output item's events. */
function itemEventTypes(item: OpenAI.Responses.ResponseOutputItem, deltas: number): string[] {
  if (item.type === 'function_call')
    return ['response.output_item.added', ...Array(deltas).fill('response.function_call_arguments.delta'), 'response.function_call_arguments.done', 'response.output_item.done'];
  return [
    'response.output_item.added',
    'response.content_part.added',
    ...Array(deltas).fill('response.output_text.delta'),
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
  ];
}

async function streamed(
  params: OpenAI.Responses.ResponseCreateParamsStreaming | Omit<OpenAI.Responses.ResponseCreateParamsStreaming, 'stream'>,
): Promise<{ events: StreamEvent[]; final: OpenAI.Responses.Response }> {
  const stream = client.responses.stream(params);
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return { events, final: await stream.finalResponse() };
}

describe('responses.stream', () => {
  it('sends the documented event sequence, numbered from 0, accumulating to the non-streamed response', async () => {
    const params = { ...base, input: 'Stream please' };
    const { events, final } = await streamed(params);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const deltas = events.filter((e) => e.type === 'response.output_text.delta');
    expect(events.map((e) => e.type)).toEqual(['response.created', 'response.in_progress', ...itemEventTypes(final.output[0]!, deltas.length), 'response.incomplete']);
    const [created, inProgress] = events as [OpenAI.Responses.ResponseCreatedEvent, OpenAI.Responses.ResponseInProgressEvent];
    expect(created.response).toMatchObject({ id: final.id, status: 'in_progress', output: [], usage: null, incomplete_details: null });
    expect(inProgress.response).toEqual(created.response);
    const message = final.output[0] as OpenAI.Responses.ResponseOutputMessage;
    const at = { item_id: message.id, output_index: 0 };
    expect(events[2]).toEqual({
      type: 'response.output_item.added',
      sequence_number: 2,
      output_index: 0,
      item: { id: message.id, type: 'message', status: 'in_progress', role: 'assistant', content: [] },
    });
    const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
    expect(events[3]).toEqual({ type: 'response.content_part.added', sequence_number: 3, ...at, content_index: 0, part });
    for (const delta of deltas) expect(delta).toEqual({ type: 'response.output_text.delta', sequence_number: delta.sequence_number, ...at, content_index: 0, delta: expect.any(String), logprobs: [] });
    const text = deltas.map((d) => (d as OpenAI.Responses.ResponseTextDeltaEvent).delta).join('');
    const tail = events.slice(-4);
    expect(tail[0]).toEqual({ type: 'response.output_text.done', sequence_number: tail[0]!.sequence_number, ...at, content_index: 0, text, logprobs: [] });
    expect(tail[1]).toEqual({ type: 'response.content_part.done', sequence_number: tail[1]!.sequence_number, ...at, content_index: 0, part: { ...part, text } });
    expect(tail[2]).toEqual({ type: 'response.output_item.done', sequence_number: tail[2]!.sequence_number, output_index: 0, item: { ...message, content: [{ ...part, text }] } });
    expect(final.output_text).toBe(text);
    const whole = await client.responses.create(params);
    expect(comparable(final)).toEqual(comparable(whole));
  });

  it('streams a function call as output_item.added, argument deltas, .done, output_item.done', async () => {
    const params = { ...base, max_output_tokens: 120, input: 'Weather?', tools: [weather], tool_choice: 'required' as const, parallel_tool_calls: false };
    const { events, final } = await streamed(params);
    const call = final.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    const argumentDeltas = events.filter((e) => e.type === 'response.function_call_arguments.delta');
    expect(argumentDeltas.map((d) => (d as OpenAI.Responses.ResponseFunctionCallArgumentsDeltaEvent).delta).join('')).toBe(call.arguments);
    const added = events.find((e) => e.type === 'response.output_item.added' && e.item.type === 'function_call');
    expect(added).toMatchObject({ item: { id: call.id, type: 'function_call', status: 'in_progress', call_id: call.call_id, name: 'get_weather', arguments: '' } });
    expect(events.find((e) => e.type === 'response.function_call_arguments.done')).toMatchObject({ item_id: call.id, arguments: call.arguments });
    expect(events.at(-1)!.type).toBe('response.completed');
    expect(new Ajv().validate(weather.parameters, JSON.parse(call.arguments))).toBe(true);
  });

  it('writes named SSE events (`event: <type>` then `data: <json>`) and no [DONE]', async () => {
    const response = await fetch(`${server.http}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...base, input: 'Hi', stream: true }) });
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const frames = (await response.text()).split(/(?<=\n\n)/);
    for (const frame of frames) {
      const [, type, data] = /^event: ([a-z_.]+)\ndata: (\{.*\})\n\n$/.exec(frame)!;
      expect(JSON.parse(data!).type).toBe(type);
    }
    expect(frames.at(-1)).toMatch(/^event: response\.incomplete\n/);
  });

  it('refuses a bad stream with a plain JSON 400 before any event', async () => {
    const response = await fetch(`${server.http}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...base, input: 'Hi', stream: true, temperature: 'hot' }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { param: 'temperature', type: 'invalid_request_error' } });
  });
});

describe('reasoning', () => {
  it('puts the thinking block in a reasoning item, streams it as reasoning_text events and counts reasoning_tokens', async () => {
    const params = { ...base, model: 'thinker', input: 'Think first' };
    const whole = await client.responses.create(params);
    expect(whole.output).toEqual([{ id: expect.stringMatching(/^rs_/), type: 'reasoning', status: 'incomplete', summary: [], content: [{ type: 'reasoning_text', text: expect.any(String) }] }]);
    expect(whole.usage!.output_tokens_details.reasoning_tokens).toBe(8);
    expect(whole.output_text).toBe('');
    const { events, final } = await streamed(params);
    const deltas = events.filter((e) => e.type === 'response.reasoning_text.delta');
    const item = final.output[0] as OpenAI.Responses.ResponseReasoningItem;
    const at = { item_id: item.id, output_index: 0, content_index: 0 };
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...deltas.map(() => 'response.reasoning_text.delta'),
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.incomplete',
    ]);
    expect(events[3]).toMatchObject({ ...at, part: { type: 'reasoning_text', text: '' } });
    const text = deltas.map((d) => (d as OpenAI.Responses.ResponseReasoningTextDeltaEvent).delta).join('');
    expect(events.find((e) => e.type === 'response.reasoning_text.done')).toEqual({ type: 'response.reasoning_text.done', sequence_number: deltas.length + 4, ...at, text });
    expect(item.content).toEqual([{ type: 'reasoning_text', text }]);
    expect(comparable(final)).toEqual(comparable(whole));
  });

  it('a thinking budget closes the block: a reasoning item, then the answer as a message, streamed in that order', async () => {
    const params = extended({ ...base, model: 'thinker', input: 'Think briefly', max_output_tokens: 12 }, { max_thinking_tokens: 3 });
    const whole = await client.responses.create(params);
    expect(whole.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    expect(whole.output[0]).toMatchObject({ status: 'completed' });
    expect(whole.usage!.output_tokens_details.reasoning_tokens).toBe(3);
    const { events, final } = await streamed(params);
    const [reasoning, message] = final.output;
    const reasoningDeltas = events.filter((e) => e.type === 'response.reasoning_text.delta').length;
    const textDeltas = events.filter((e) => e.type === 'response.output_text.delta').length;
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array(reasoningDeltas).fill('response.reasoning_text.delta'),
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
      ...itemEventTypes(message!, textDeltas),
      'response.incomplete',
    ]);
    expect(events.filter((e) => e.type === 'response.output_item.added').map((e) => e.output_index)).toEqual([0, 1]);
    expect(events.find((e) => e.type === 'response.output_item.done')).toMatchObject({ item: reasoning });
    expect(comparable(final)).toEqual(comparable(whole));
  });

  it('tool_choice required after thinking: the call is read from the answer only and fits the schema', async () => {
    const response = await client.responses.create(
      extended(
        {
          ...base,
          model: 'thinker',
          input: 'Weather?',
          max_output_tokens: 120,
          tools: [weather],
          tool_choice: 'required',
          parallel_tool_calls: false,
        },
        { max_thinking_tokens: 2 },
      ),
    );
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    const call = response.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(new Ajv().validate(weather.parameters, JSON.parse(call.arguments))).toBe(true);
  });

  it('takes reasoning.effort (none turns the template thinking off) and refuses an unknown effort naming reasoning.effort', async () => {
    const thinking = await client.responses.create({ ...base, input: 'Hi' });
    const off = await client.responses.create({ ...base, input: 'Hi', reasoning: { effort: 'none' } });
    expect(off.reasoning).toEqual({ effort: 'none', summary: null });
    // Qwen3's template writes an empty closed block into the prompt when thinking is off.
    expect(off.usage!.input_tokens).toBeGreaterThan(thinking.usage!.input_tokens);
    const error = await client.responses.create({ ...base, input: 'Hi', reasoning: { effort: 'extreme' as never } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, param: 'reasoning.effort' });
  });

  it("renders an input reasoning item as the next assistant turn's reasoning_content", async () => {
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: 'Hi' },
      { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'The user greets me.' }] },
      { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello!', annotations: [] }] },
      { role: 'user', content: 'And now?' },
    ];
    const withReasoning = await client.responses.create({ ...base, input });
    const without = await client.responses.create({ ...base, input: input.filter((item) => (item as { type?: string }).type !== 'reasoning') });
    // Qwen3's template drops the reasoning of turns before the last user message; both prompts agree.
    expect(withReasoning.usage!.input_tokens).toBe(without.usage!.input_tokens);
    const last = await client.responses.create({ ...base, input: input.slice(0, 3) });
    const lastWithout = await client.responses.create({ ...base, input: [input[0]!, input[2]!] });
    expect(last.usage!.input_tokens).toBeGreaterThan(lastWithout.usage!.input_tokens);
  });
});

describe('stored responses', () => {
  it('continues a conversation from previous_response_id: the stored input and output come first', async () => {
    const first = await client.responses.create({ ...base, input: 'My name is Ada.', instructions: 'Be brief.' });
    const next = await client.responses.create({ ...base, input: 'What is my name?', previous_response_id: first.id });
    expect(next.previous_response_id).toBe(first.id);
    // Instructions are not carried over (OpenAI's rule), so the prompt is exactly this chat history.
    const chat = await client.chat.completions.create({
      model: 'qwen3',
      max_tokens: 1,
      messages: [
        { role: 'user', content: 'My name is Ada.' },
        { role: 'assistant', content: first.output_text },
        { role: 'user', content: 'What is my name?' },
      ],
    });
    expect(next.usage!.input_tokens).toBe(chat.usage!.prompt_tokens);
    // A chain continues: the third turn sees both earlier ones.
    const third = await client.responses.create({ ...base, input: 'And again?', previous_response_id: next.id });
    expect(third.usage!.input_tokens).toBeGreaterThan(next.usage!.input_tokens + next.usage!.output_tokens);
  });

  it('retrieves, lists input items, refuses to cancel a finished one, deletes, then answers 404', async () => {
    const created = await client.responses.create({
      ...base,
      input: [
        { role: 'user', content: 'one' },
        { role: 'user', content: [{ type: 'input_text', text: 'two' }] },
      ],
    });
    expect(await client.responses.retrieve(created.id)).toEqual(created);
    const items = await client.responses.inputItems.list(created.id, { order: 'asc' });
    expect(items.data.map((item) => ({ ...item, id: 'x' }))).toEqual([
      { id: 'x', type: 'message', role: 'user', content: 'one' },
      { id: 'x', type: 'message', role: 'user', content: [{ type: 'input_text', text: 'two' }] },
    ]);
    const cancel = await client.responses.cancel(created.id).catch((e: unknown) => e);
    expect(cancel).toBeInstanceOf(BadRequestError);
    await client.responses.delete(created.id);
    const gone = await client.responses.retrieve(created.id).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(NotFoundError);
    expect(gone).toMatchObject({ status: 404, error: { type: 'invalid_request_error', message: `Response with id '${created.id}' not found.` } });
    const missing = await client.responses.create({ ...base, input: 'again', previous_response_id: created.id }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 400, param: 'previous_response_id', code: 'previous_response_not_found' });
  });

  it('keeps nothing with store false, and resolves item_reference to a stored item', async () => {
    const unstored = await client.responses.create({ ...base, input: 'x', store: false });
    expect(unstored).toMatchObject({ store: false });
    await expect(client.responses.retrieve(unstored.id)).rejects.toBeInstanceOf(NotFoundError);
    const stored = await client.responses.create({ ...base, input: 'Say something.' });
    const byReference = await client.responses.create({
      ...base,
      input: [
        { role: 'user', content: 'Say something.' },
        { type: 'item_reference', id: stored.output[0]!.id! },
        { role: 'user', content: 'More.' },
      ],
    });
    const spelled = await client.responses.create({ ...base, input: 'More.', previous_response_id: stored.id });
    expect(byReference.usage!.input_tokens).toBe(spelled.usage!.input_tokens);
    const dangling = await client.responses.create({ ...base, input: [{ type: 'item_reference', id: 'msg_nope' }] }).catch((e: unknown) => e);
    expect(dangling).toMatchObject({ status: 400, param: 'input[0].id' });
  });
});

/** The SDK adds its output_text helper to create and retrieve answers, not to cancel's. */
const withoutHelper = ({ output_text: _, ...wire }: OpenAI.Responses.Response): Omit<OpenAI.Responses.Response, 'output_text'> => wire;

describe('background responses', () => {
  it('answers queued at once; GET polls it to completed', async () => {
    const queued = await client.responses.create({ ...base, input: 'Later', background: true });
    expect(queued).toMatchObject({ status: 'queued', background: true, output: [], usage: null });
    await vi.waitFor(async () => expect((await client.responses.retrieve(queued.id)).status).toBe('incomplete'), { timeout: 30_000, interval: 50 });
    const done = await client.responses.retrieve(queued.id);
    expect(done).toMatchObject({ id: queued.id, background: true, incomplete_details: { reason: 'max_output_tokens' }, usage: { output_tokens: 8 } });
    expect(done.output).toMatchObject([{ type: 'message', status: 'incomplete' }]);
    // Cancelling a finished background response answers it as it stands.
    expect(withoutHelper(await client.responses.cancel(queued.id))).toEqual(withoutHelper(done));
  });

  it('cancel aborts a running one: status cancelled, the engine idle and its KV blocks back', async () => {
    const queued = await client.responses.create(extended({ model: 'qwen3', input: 'Go on', background: true, max_output_tokens: 2000 }, { ignore_eos: true }));
    await vi.waitFor(async () => expect((await client.responses.retrieve(queued.id)).status).toBe('in_progress'), { timeout: 30_000, interval: 20 });
    const cancelled = await client.responses.cancel(queued.id);
    expect(cancelled).toMatchObject({ id: queued.id, status: 'cancelled', background: true });
    expect(withoutHelper(await client.responses.retrieve(queued.id))).toEqual(withoutHelper(cancelled));
    await vi.waitFor(() => expect(model.engine.numActive === 0 && (model.engine.stats?.kvCacheUsage ?? 0) === 0).toBe(true), { timeout: 30_000, interval: 20 });
  });
});

describe('bad requests', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['an unknown field', { input: 'x', frobnicate: 1 }, 'frobnicate'],
    ['a missing input', {}, 'input'],
    ['a hosted tool', { input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    ['an invalid function name', { input: 'x', tools: [{ type: 'function', name: 'bad name' }] }, 'tools[0].name'],
    ['a tool_choice naming no tool', { input: 'x', tools: [weather], tool_choice: { type: 'function', name: 'other' } }, 'tool_choice'],
    ['an invalid text.format schema', { input: 'x', text: { format: { type: 'json_schema', name: 'a', schema: { type: 'object', properties: { a: { type: 1 } } } } } }, 'text.format.schema'],
    ['an unknown text.format type', { input: 'x', text: { format: { type: 'yaml' } } }, 'text.format.type'],
    ['a bad max_output_tokens', { input: 'x', max_output_tokens: 0 }, 'max_output_tokens'],
    ['background with store false', { input: 'x', background: true, store: false }, 'store'],
    ['background with stream', { input: 'x', background: true, stream: true }, 'background'],
    ['an unknown item type', { input: [{ type: 'computer_call' }] }, 'input[0].type'],
    ['an image part', { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input[0].content[0].type'],
    ['a bad role', { input: [{ role: 'robot', content: 'x' }] }, 'input[0].role'],
    ['chat fields', { input: 'x', messages: [] }, 'messages'],
  ])('refuses %s with a 400 naming the field', async (_, extra, param) => {
    const error = await client.responses.create({ model: 'qwen3', ...extra } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, param, type: 'invalid_request_error' });
  });

  it('answers an unknown model with 404 model_not_found', async () => {
    await expect(client.responses.create({ model: 'nope', input: 'x' })).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
  });
});

describe('client disconnect', () => {
  it('aborts the generation and returns its KV blocks', async () => {
    const body = JSON.stringify({ model: 'qwen3', input: 'Go on', stream: true, max_output_tokens: 2000, ignore_eos: true });
    const received = await new Promise<string>((resolve, reject) => {
      const request = httpRequest(`${server.http}/v1/responses`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (data: string) => {
          text += data;
          // Text is flowing: the generation runs; now the client goes away.
          if (text.includes('response.output_text.delta')) {
            request.destroy();
            resolve(text);
          }
        });
      });
      request.on('error', (error) => (request.destroyed ? undefined : reject(error)));
      request.end(body);
    });
    expect(received).toMatch(/^event: response\.created\n/);
    await vi.waitFor(() => expect(model.engine.numActive === 0 && (model.engine.stats?.kvCacheUsage ?? 0) === 0).toBe(true), { timeout: 30_000, interval: 20 });
  });
});
