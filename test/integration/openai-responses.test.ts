// /v1/responses through the real server and the official SDK (client.responses.create,
// .stream, .retrieve, .inputItems.list, .delete, .cancel). The random-weight tiny model writes
// gibberish, so what is pinned holds for any output: the response shape field by field, the
// event sequence of a stream (every documented event in order, sequence numbers 0..n, deltas
// adding up to the .done texts, the final response equal in shape to the non-streamed one),
// text.format json_schema and tool_choice required / named constrained by the engine's grammar
// so their JSON and function calls are valid whatever the weights, previous_response_id carrying
// the conversation into the prompt, the store's routes, and 400s naming the field at fault.

import { Ajv } from 'ajv';
import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let client: OpenAI;
let model: LlmModel;

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  server = await startTestServer(repository, ['--responses-store-size', '8']);
  model = server.service.llmModel('qwen3');
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 120_000);
afterAll(async () => server?.stop());

const base = { model: 'qwen3', temperature: 0, max_output_tokens: 8 } as const;
const weather = { type: 'function', name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } }, required: ['city'], additionalProperties: false }, strict: true } as const;

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
    expect(message).toEqual({ id: expect.stringMatching(/^msg_/), type: 'message', status: 'incomplete', role: 'assistant', content: [{ type: 'output_text', text: expect.any(String), annotations: [], logprobs: [] }] });
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

  it.each([['required', 'required' as const], ['named', { type: 'function', name: 'get_weather' } as const]])('answers tool_choice %s with function_call items whose arguments fit the schema', async (_, choice) => {
    const response = await client.responses.create({ ...base, max_output_tokens: 120, input: 'Weather in Paris?', tools: [weather], tool_choice: choice, parallel_tool_calls: false });
    expect(response.status).toBe('completed');
    const calls = response.output.filter((item) => item.type === 'function_call');
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    expect(call).toEqual({ id: expect.stringMatching(/^fc_/), type: 'function_call', status: 'completed', call_id: expect.stringMatching(/^call_/), name: 'get_weather', arguments: expect.any(String) });
    expect(new Ajv().validate(weather.parameters, JSON.parse(call.arguments))).toBe(true);
    expect(response.tools).toEqual([weather]);
    expect(response.tool_choice).toEqual(choice);
  });
});

/** Prompt tokens of a chat request with the same messages, through the chat route. */
async function promptTokens(messages: OpenAI.ChatCompletionMessageParam[]): Promise<number> {
  const completion = await client.chat.completions.create({ model: 'qwen3', messages, max_tokens: 1, tools: [{ type: 'function', function: { name: weather.name, description: weather.description, parameters: weather.parameters, strict: true } }] });
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
  if (item.type === 'function_call') return ['response.output_item.added', ...Array(deltas).fill('response.function_call_arguments.delta'), 'response.function_call_arguments.done', 'response.output_item.done'];
  return ['response.output_item.added', 'response.content_part.added', ...Array(deltas).fill('response.output_text.delta'), 'response.output_text.done', 'response.content_part.done', 'response.output_item.done'];
}

async function streamed(params: OpenAI.Responses.ResponseCreateParamsStreaming | Omit<OpenAI.Responses.ResponseCreateParamsStreaming, 'stream'>): Promise<{ events: StreamEvent[]; final: OpenAI.Responses.Response }> {
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
    expect(events[2]).toEqual({ type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { id: message.id, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
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
    const response = await fetch(`${server.http}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...base, input: 'Hi', stream: true, temperature: 'hot' }) });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { param: 'temperature', type: 'invalid_request_error' } });
  });
});
