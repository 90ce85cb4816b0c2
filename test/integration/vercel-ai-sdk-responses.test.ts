// The Vercel AI SDK's OpenAI provider (`@ai-sdk/openai`), whose default model speaks the
// Responses API, against the real server: generateText and streamText on plain text, an object
// under a zod schema (text.format json_schema), tools under toolChoice required / named with
// schema-valid input, and a tool loop whose second step sends the call and its result back
// (function_call / function_call_output, or item_reference to the stored call); a custom tool
// (openai.tools.customTool) whose regex every sampled input holds to. Every request
// is recorded on the wire with its status, so a refusal would show its body.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, Output, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const sent: { url: string; body: Record<string, unknown>; status: number }[] = [];
let conveyor: ReturnType<typeof createOpenAI>;

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  server = await startTestServer(repository);
  const recordingFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (typeof init?.body === 'string') sent.push({ url: String(input), body: JSON.parse(init.body) as Record<string, unknown>, status: response.status });
    return response;
  };
  conveyor = createOpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', fetch: recordingFetch });
}, 120_000);
afterAll(async () => server?.stop());

/** The last request, which must have gone to /v1/responses and been accepted. */
const lastAccepted = (): Record<string, unknown> => {
  const last = sent.at(-1)!;
  expect(last.url).toMatch(/\/v1\/responses$/);
  expect(last.status, JSON.stringify(last.body)).toBe(200);
  return last.body;
};

describe('text', () => {
  it('generateText reads the output_text, usage and a length stop', async () => {
    const result = await generateText({ model: conveyor('qwen3'), prompt: 'Hello', maxOutputTokens: 8, temperature: 0, maxRetries: 0 });
    expect(lastAccepted()).toMatchObject({ model: 'qwen3', max_output_tokens: 8 });
    expect(result.finishReason).toBe('length');
    expect(result.usage).toMatchObject({ outputTokens: 8, inputTokens: expect.any(Number) });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.providerMetadata?.openai?.responseId).toMatch(/^resp_/);
  });

  it('streamText accumulates the deltas into the same text as generateText', async () => {
    const settings = { model: conveyor('qwen3'), system: 'Be brief.', prompt: 'Stream', maxOutputTokens: 8, temperature: 0, maxRetries: 0 } as const;
    const whole = await generateText(settings);
    const stream = streamText(settings);
    let text = '';
    for await (const delta of stream.textStream) text += delta;
    expect(lastAccepted()).toMatchObject({ stream: true, input: [{ role: 'system', content: 'Be brief.' }, { role: 'user' }] });
    expect(text).toBe(whole.text);
    expect(await stream.finishReason).toBe('length');
    expect((await stream.usage).outputTokens).toBe(8);
  });

  it('an object under a zod schema comes back valid (text.format json_schema)', async () => {
    const Switch = z.object({ on: z.boolean(), mode: z.enum(['eco', 'max']) });
    const result = await generateText({ model: conveyor('qwen3'), output: Output.object({ schema: Switch }), prompt: 'Set it.', maxOutputTokens: 60, temperature: 0, maxRetries: 0 });
    expect(lastAccepted()).toMatchObject({ text: { format: { type: 'json_schema', strict: true } } });
    expect(Switch.parse(result.output)).toEqual(result.output);
  });
});

const schemas = { set_mode: z.object({ mode: z.enum(['on', 'off']), level: z.number().int().min(0).max(3) }), ping: z.object({ loud: z.boolean() }) };
const tools = { set_mode: tool({ description: 'Set the mode', inputSchema: schemas.set_mode }), ping: tool({ description: 'Ping', inputSchema: schemas.ping }) };

describe('conversations', () => {
  it('a follow-up with the first answer in its messages refers to the stored message by item_reference, and is answered', async () => {
    const settings = { model: conveyor('qwen3'), maxOutputTokens: 8, temperature: 0, maxRetries: 0 } as const;
    const first = await generateText({ ...settings, prompt: 'My name is Ada.' });
    const next = await generateText({ ...settings, messages: [{ role: 'user', content: 'My name is Ada.' }, ...first.response.messages, { role: 'user', content: 'Who am I?' }] });
    const input = lastAccepted()['input'] as Record<string, unknown>[];
    const stored = (await (await fetch(`${server.http}/v1/responses/${String(first.providerMetadata?.openai?.responseId)}`)).json()) as { output: { id: string }[] };
    expect(input[1]).toEqual({ type: 'item_reference', id: stored.output[0]!.id });
    // The referenced message reached the prompt: the same history spelled out gives the same prompt length.
    const spelled = await generateText({
      ...settings,
      providerOptions: { openai: { store: false } },
      messages: [
        { role: 'user', content: 'My name is Ada.' },
        { role: 'assistant', content: first.text },
        { role: 'user', content: 'Who am I?' },
      ],
    });
    expect(next.usage.inputTokens).toBe(spelled.usage.inputTokens);
  });
});

describe('tools', () => {
  it('generateText, toolChoice required: calls an offered tool with schema-valid input', async () => {
    const result = await generateText({ model: conveyor('qwen3'), tools, toolChoice: 'required', prompt: 'Turn it on.', maxOutputTokens: 120, temperature: 0, maxRetries: 0 });
    expect(lastAccepted()).toMatchObject({
      tool_choice: 'required',
      tools: [
        { type: 'function', name: 'set_mode' },
        { type: 'function', name: 'ping' },
      ],
    });
    expect(result.finishReason).toBe('tool-calls');
    expect(result.toolCalls.length).toBeGreaterThan(0);
    for (const call of result.toolCalls) {
      const name = call.toolName as keyof typeof schemas;
      expect(schemas[name].parse(call.input)).toEqual(call.input);
    }
  });

  it('streamText, a named tool: the streamed call equals the generated one', async () => {
    const settings = { model: conveyor('qwen3'), tools, toolChoice: { type: 'tool', toolName: 'set_mode' }, prompt: 'Turn it on.', maxOutputTokens: 120, temperature: 0, maxRetries: 0 } as const;
    const whole = await generateText(settings);
    const stream = streamText(settings);
    const calls = await stream.toolCalls;
    expect(lastAccepted()).toMatchObject({ stream: true, tool_choice: { type: 'function', name: 'set_mode' } });
    expect(calls.map((c) => [c.toolName, c.input])).toEqual(whole.toolCalls.map((c) => [c.toolName, c.input]));
    expect(await stream.finishReason).toBe('tool-calls');
  });

  it('a tool loop: the second step sends the call and its result back and is accepted', async () => {
    sent.length = 0;
    const executing = { set_mode: tool({ ...tools.set_mode, execute: async () => ({ ok: true }) }) };
    const result = await generateText({
      model: conveyor('qwen3'),
      tools: executing,
      toolChoice: { type: 'tool', toolName: 'set_mode' },
      prepareStep: ({ stepNumber }) => (stepNumber === 1 ? { toolChoice: 'none' } : {}),
      stopWhen: stepCountIs(2),
      prompt: 'Turn it on.',
      maxOutputTokens: 60,
      temperature: 0,
      maxRetries: 0,
    });
    expect(sent.map((request) => request.status)).toEqual([200, 200]);
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
    const [call] = result.steps[0]!.toolCalls;
    const input = sent[1]!.body['input'] as Record<string, unknown>[];
    expect(input.at(-2)).toEqual({ type: 'function_call', call_id: call!.toolCallId, name: 'set_mode', arguments: JSON.stringify(call!.input) });
    expect(input.at(-1)).toEqual({ type: 'function_call_output', call_id: call!.toolCallId, output: '{"ok":true}' });
    // The history reached the prompt: the second step's prompt is the longer by the call and its result.
    expect(result.steps[1]!.usage.inputTokens).toBeGreaterThan(result.steps[0]!.usage.inputTokens! + 10);
  });
});

describe('custom tools (openai.tools.customTool)', () => {
  it('toolChoice required and the tool named: every call input holds to its regex (temperature 1)', async () => {
    const ticket = conveyor.tools.customTool({ name: 'ticket', description: 'Files a ticket id.', format: { type: 'grammar', syntax: 'regex', definition: '[A-Z]{2,3}-[0-9]{1,4}' } });
    for (const toolChoice of ['required', { type: 'tool', toolName: 'ticket' }] as const) {
      for (let sample = 0; sample < 4; sample++) {
        // One call (the Responses API takes no seed, so each run samples afresh): it always ends well within the tokens.
        const result = await generateText({
          model: conveyor('qwen3'),
          tools: { ticket },
          toolChoice,
          prompt: 'File it.',
          maxOutputTokens: 60,
          temperature: 1,
          providerOptions: { openai: { parallelToolCalls: false } },
          maxRetries: 0,
        });
        expect(lastAccepted()).toMatchObject({ tools: [{ type: 'custom', name: 'ticket' }], tool_choice: toolChoice === 'required' ? 'required' : { type: 'custom', name: 'ticket' } });
        expect(result.finishReason).toBe('tool-calls');
        expect(result.toolCalls.length).toBeGreaterThan(0);
        for (const call of result.toolCalls) {
          expect(call.toolName).toBe('ticket');
          expect(call.input).toMatch(/^[A-Z]{2,3}-[0-9]{1,4}$/);
        }
      }
    }
  });
});
