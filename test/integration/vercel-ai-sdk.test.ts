// The Vercel AI SDK (`ai` with `@ai-sdk/openai-compatible`) against the real server: what the SDK
// sends for an object with a zod schema (response_format json_schema, strict) and for tools with
// toolChoice required or a named tool is accepted, and, through the engine's mask, the random-weight
// tiny model's answers are valid whatever its weights: the object parses under the zod schema and
// under ajv on the very JSON schema the SDK sent, and every tool call names an offered tool with
// schema-valid input. Every request is recorded on the wire, so a refusal would show its body.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateObject, generateText, jsonSchema, Output, stepCountIs, streamText, tool } from 'ai';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
/** Every request the SDK sent, with the server's status: observed on the wire, not altered. */
const sent: { body: Record<string, unknown>; status: number }[] = [];
let conveyor: ReturnType<typeof createOpenAICompatible>;

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  server = await startTestServer(repository);
  const recordingFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (typeof init?.body === 'string') sent.push({ body: JSON.parse(init.body) as Record<string, unknown>, status: response.status });
    return response;
  };
  // supportsStructuredOutputs makes the provider send response_format json_schema (without it, json_object);
  // includeUsage makes streams ask for stream_options.include_usage.
  conveyor = createOpenAICompatible({ name: 'conveyor', baseURL: `${server.http}/v1`, supportsStructuredOutputs: true, includeUsage: true, fetch: recordingFetch });
}, 120_000);
afterAll(async () => server?.stop());

const ajv = new Ajv({ strict: false });
/** The last request body the SDK sent, which must have been accepted. */
const lastAccepted = (): Record<string, unknown> => {
  const last = sent.at(-1)!;
  expect(last.status, JSON.stringify(last.body)).toBe(200);
  return last.body;
};

// Booleans, short enums and small bounded integers let the random model finish an object in a few tokens.
const Switch = z.object({ on: z.boolean(), mode: z.enum(['eco', 'max']), level: z.number().int().min(0).max(3) });

describe('objects with a zod schema', () => {
  it('generateObject sends response_format json_schema (strict) and returns a schema-valid object', async () => {
    for (const seed of [1, 2, 3]) {
      sent.length = 0;
      const { object, finishReason, warnings } = await generateObject({
        model: conveyor('qwen3'),
        schema: Switch,
        schemaName: 'switch',
        prompt: 'Set the switch.',
        maxOutputTokens: 120,
        temperature: 1,
        seed,
        maxRetries: 0,
      });
      expect(finishReason).toBe('stop');
      expect(warnings).toEqual([]);
      expect(Switch.parse(object)).toEqual(object);
      const format = lastAccepted()['response_format'] as { type: string; json_schema: { name: string; strict: boolean; schema: object } };
      expect(format).toMatchObject({ type: 'json_schema', json_schema: { name: 'switch', strict: true } });
      const validate = ajv.compile(format.json_schema.schema);
      expect(validate(object), JSON.stringify(validate.errors)).toBe(true);
    }
  });

  it('generateText with Output.object, the SDK’s newer way, returns the same kind of object', async () => {
    sent.length = 0;
    const { output } = await generateText({ model: conveyor('qwen3'), output: Output.object({ schema: Switch }), prompt: 'Set the switch.', maxOutputTokens: 120, temperature: 0, maxRetries: 0 });
    expect(Switch.parse(output)).toEqual(output);
    expect(lastAccepted()['response_format']).toMatchObject({ type: 'json_schema' });
  });

  it('a schema the server cannot compile is an APICallError 400 carrying the OpenAI error, naming the member', async () => {
    sent.length = 0;
    const bad = jsonSchema<{ a: unknown }>({ type: 'object', properties: { a: { type: 1 } } } as never);
    const error = await generateObject({ model: conveyor('qwen3'), schema: bad, prompt: 'x', maxOutputTokens: 8, maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    const apiError = error as APICallError;
    expect(apiError.statusCode).toBe(400);
    expect(apiError.isRetryable).toBe(false);
    expect(JSON.parse(apiError.responseBody!)).toMatchObject({ error: { type: 'invalid_request_error', param: expect.stringMatching(/^response_format/) } });
    expect(sent).toHaveLength(1);
  });
});

// The zod schemas kept apart from the tools: tool() widens inputSchema to the SDK's FlexibleSchema.
const schemas = {
  set_mode: z.object({ mode: z.enum(['on', 'off']), level: z.number().int().min(0).max(3) }),
  ping: z.object({ loud: z.boolean() }),
};
const tools = {
  set_mode: tool({ description: 'Set the mode', inputSchema: schemas.set_mode }),
  ping: tool({ description: 'Ping', inputSchema: schemas.ping }),
};
type Call = { toolName: string; input: unknown };
const expectValidCalls = (calls: readonly Call[], allowed: readonly (keyof typeof tools)[]): void => {
  expect(calls.length).toBeGreaterThan(0);
  const offered = (lastAccepted()['tools'] as { function: { name: string; parameters: object } }[]).map((t) => t.function);
  for (const call of calls) {
    expect(allowed).toContain(call.toolName);
    const name = call.toolName as keyof typeof tools;
    expect(schemas[name].parse(call.input)).toEqual(call.input);
    const validate = ajv.compile(offered.find((f) => f.name === name)!.parameters);
    expect(validate(call.input), JSON.stringify(validate.errors)).toBe(true);
  }
};
const prompt = 'Turn it on.';

describe('tools', () => {
  it('generateText, toolChoice required: calls an offered tool with schema-valid input, finishReason tool-calls', async () => {
    for (const seed of [1, 2, 3]) {
      sent.length = 0;
      const result = await generateText({ model: conveyor('qwen3'), tools, toolChoice: 'required', prompt, maxOutputTokens: 120, seed, maxRetries: 0 });
      expect(lastAccepted()['tool_choice']).toBe('required');
      expect(result.finishReason).toBe('tool-calls');
      expectValidCalls(result.toolCalls, ['set_mode', 'ping']);
    }
  });

  it('generateText, a named tool: the call is to it, and execute receives its validated input', async () => {
    sent.length = 0;
    const received: unknown[] = [];
    const executing = {
      ...tools,
      set_mode: tool({
        ...tools.set_mode,
        execute: async (input) => {
          received.push(input);
          return 'done';
        },
      }),
    };
    const result = await generateText({ model: conveyor('qwen3'), tools: executing, toolChoice: { type: 'tool', toolName: 'set_mode' }, prompt, maxOutputTokens: 120, temperature: 0, maxRetries: 0 });
    expect(lastAccepted()['tool_choice']).toEqual({ type: 'function', function: { name: 'set_mode' } });
    expect(result.finishReason).toBe('tool-calls');
    expectValidCalls(result.toolCalls, ['set_mode']);
    expect(received).toEqual(result.toolCalls.map((c) => c.input));
    expect(result.toolResults.map((r) => r.output)).toEqual(result.toolCalls.map(() => 'done'));
  });

  it('a tool loop: the second step sends the call and its result back (assistant tool_calls, tool message) and is accepted', async () => {
    sent.length = 0;
    const executing = { set_mode: tool({ ...tools.set_mode, strict: true, execute: async () => ({ ok: true }) }) };
    const result = await generateText({
      model: conveyor('qwen3'),
      system: 'You control a switch.',
      tools: executing,
      toolChoice: { type: 'tool', toolName: 'set_mode' },
      // The second step may not call again, so the loop ends after it.
      prepareStep: ({ stepNumber }) => (stepNumber === 1 ? { toolChoice: 'none' } : {}),
      stopWhen: stepCountIs(2),
      prompt,
      maxOutputTokens: 60,
      temperature: 0,
      maxRetries: 0,
    });
    expect(result.steps.map((step) => step.finishReason)).toHaveLength(2);
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
    expect(['stop', 'length']).toContain(result.steps[1]!.finishReason);
    expect(sent.map((request) => request.status)).toEqual([200, 200]);
    const [call] = result.steps[0]!.toolCalls;
    expect(sent[1]!.body['messages']).toEqual([
      { role: 'system', content: 'You control a switch.' },
      { role: 'user', content: prompt },
      { role: 'assistant', content: null, tool_calls: [{ id: call!.toolCallId, type: 'function', function: { name: 'set_mode', arguments: JSON.stringify(call!.input) } }] },
      { role: 'tool', tool_call_id: call!.toolCallId, content: '{"ok":true}' },
    ]);
    expect(sent[1]!.body['tools']).toMatchObject([{ function: { name: 'set_mode', strict: true } }]);
    // The history reached the prompt: the second step's prompt is the longer by the call and its result.
    expect(result.steps[1]!.usage.inputTokens).toBeGreaterThan(result.steps[0]!.usage.inputTokens! + 10);
  });

  it('streamText, a named tool: the SDK accumulates the streamed deltas into the same call as generateText', async () => {
    const settings = { model: conveyor('qwen3'), tools, toolChoice: { type: 'tool', toolName: 'set_mode' }, prompt, maxOutputTokens: 120, temperature: 0, maxRetries: 0 } as const;
    const whole = await generateText(settings);
    sent.length = 0;
    const streamErrors: unknown[] = [];
    const stream = streamText({ ...settings, onError: ({ error }) => void streamErrors.push(error) });
    const [calls, finishReason, usage] = await Promise.all([stream.toolCalls, stream.finishReason, stream.usage]);
    expect(streamErrors).toEqual([]);
    expect(lastAccepted()).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(finishReason).toBe('tool-calls');
    expectValidCalls(calls, ['set_mode']);
    expect(calls.map((c) => [c.toolName, c.input])).toEqual(whole.toolCalls.map((c) => [c.toolName, c.input]));
    expect(usage.outputTokens).toBeGreaterThan(0);
  });
});
