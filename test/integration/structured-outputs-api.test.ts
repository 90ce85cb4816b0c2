// Structured outputs at the API, through the official openai SDK against the real server: what
// `chat.completions.parse` with a zod schema sends is accepted and becomes the right GrammarSpec
// on the engine's GenerateRequest; every bad constraint is a 400 naming `param`, and nothing
// reaches the engine. (Masking itself is the engine's; this file checks the API side.)
import OpenAI, { BadRequestError } from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chatInput } from '../../openai-compat/chat.js';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let client: OpenAI;
let model: LlmModel;
/** Every request the SDK sent, with the server's status: observed on the wire, not altered. */
const sent: { body: Record<string, unknown>; status: number }[] = [];
let engineSteps = 0;

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  server = await startTestServer(repository);
  const recordingFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (typeof init?.body === 'string') sent.push({ body: JSON.parse(init.body) as Record<string, unknown>, status: response.status });
    return response;
  };
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0, fetch: recordingFetch });
  model = server.service.llmModel('qwen3');
  model.engine.onStep(() => engineSteps++);
}, 120_000);
afterAll(async () => server?.stop());

const user = [{ role: 'user' as const, content: 'Extract the person: Ada, 36.' }];
const Person = z.object({ name: z.string(), age: z.number().int().min(0), tags: z.array(z.enum(['admin', 'user'])).max(3), email: z.string().nullable() });

describe('chat.completions.parse with zodResponseFormat', () => {
  it('is accepted, and reaches the engine as a json_schema GrammarSpec of the canonical schema', async () => {
    sent.length = 0;
    const stepsBefore = engineSteps;
    const outcome = await client.chat.completions.parse({ model: 'qwen3', messages: user, response_format: zodResponseFormat(Person, 'person'), max_tokens: 8 }).catch((error: unknown) => error);
    // Until the engine masks, the tiny model's text is no JSON and the SDK's own parsing may
    // fail; what must never happen is the server refusing the request.
    expect(outcome).not.toBeInstanceOf(OpenAI.APIError);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.status).toBe(200);
    // The step counter the bad-input cases rely on does see an accepted request run.
    expect(engineSteps).toBeGreaterThan(stepsBefore);
    const format = sent[0]!.body['response_format'] as { type: string; json_schema: { name: string; schema: unknown; strict: boolean } };
    expect(format).toMatchObject({ type: 'json_schema', json_schema: { name: 'person', strict: true } });

    // The same body through the server's own translation and input processor.
    const { request } = await model.prepare(chatInput(sent[0]!.body));
    expect(request.grammar?.kind).toBe('json_schema');
    const schema = request.grammar?.kind === 'json_schema' ? (JSON.parse(request.grammar.schema) as unknown) : null;
    expect(schema).toEqual(format.json_schema.schema);
    // Canonical: keys sorted at every level.
    expect(request.grammar).toMatchObject({ schema: expect.stringMatching(/^\{"\$schema":.*"additionalProperties":false,"properties":\{"age":/) });
  });

  it('accepts json_object, structured_outputs and guided_* through the SDK, finishing as the engine says', async () => {
    const bodies: Record<string, unknown>[] = [
      { response_format: { type: 'json_object' } },
      { response_format: { type: 'text' } },
      { structured_outputs: { choice: ['yes', 'no'] } },
      { guided_regex: '[a-z]{1,8}' },
      { guided_json: { type: 'object', properties: { ok: { type: 'boolean' } } } },
      { guided_grammar: 'root ::= "yes" | "no"' },
    ];
    for (const extra of bodies) {
      const completion = await client.chat.completions.create({ model: 'qwen3', messages: user, max_tokens: 4, ...extra } as OpenAI.ChatCompletionCreateParamsNonStreaming);
      expect(['stop', 'length']).toContain(completion.choices[0]!.finish_reason);
    }
    const completion = await client.completions.create({ model: 'qwen3', prompt: 'Answer:', max_tokens: 4, structured_outputs: { regex: '\\d+' } } as OpenAI.CompletionCreateParamsNonStreaming);
    expect(completion.choices).toHaveLength(1);
  });
});

describe('bad constraints: 400 naming param, nothing reaches the engine', () => {
  const PERSON = zodResponseFormat(Person, 'person');
  const cases: [string, Record<string, unknown>, string][] = [
    ['an invalid schema', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', minimum: 'zero' } } } }, 'response_format.json_schema.schema'],
    [
      'a $ref cycle',
      { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { $defs: { a: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' } } } },
      'response_format.json_schema.schema',
    ],
    ['an unresolvable $ref', { guided_json: { $ref: '#/definitions/nowhere' } }, 'guided_json'],
    ['a schema too large', { guided_json: { type: 'object', properties: Object.fromEntries(Array.from({ length: 4000 }, (_, i) => [`p${i}`, { type: 'string' }])) } }, 'guided_json'],
    ['a regex that cannot compile', { structured_outputs: { regex: '([a-z]' } }, 'structured_outputs.regex'],
    ['an empty choice', { guided_choice: [] }, 'guided_choice'],
    ['a grammar given together with response_format', { response_format: PERSON, guided_grammar: 'root ::= "a"' }, 'guided_grammar'],
    ['guided_json together with response_format json_schema', { response_format: PERSON, guided_json: { type: 'object' } }, 'guided_json'],
    ['two structured_outputs members', { structured_outputs: { json: { type: 'object' }, choice: ['a'] } }, 'structured_outputs.choice'],
  ];
  it.each(cases)('%s', async (_name, extra, param) => {
    const stepsBefore = engineSteps;
    const error = await client.chat.completions.create({ model: 'qwen3', messages: user, max_tokens: 4, ...extra } as OpenAI.ChatCompletionCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    const bad = error as BadRequestError;
    expect(bad.status).toBe(400);
    expect(bad.param).toBe(param);
    expect(bad.type).toBe('invalid_request_error');
    expect(bad.message).toContain(param);
    expect(engineSteps).toBe(stepsBefore);
    expect(model.engine.numActive).toBe(0);
  });

  it('the same through /v1/completions and streaming', async () => {
    const stepsBefore = engineSteps;
    const completion = await client.completions.create({ model: 'qwen3', prompt: 'x', guided_regex: '(' } as OpenAI.CompletionCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(completion).toMatchObject({ status: 400, param: 'guided_regex' });
    const stream = await client.chat.completions.create({ model: 'qwen3', messages: user, stream: true, guided_choice: [1] } as never).catch((e: unknown) => e);
    expect(stream).toMatchObject({ status: 400, param: 'guided_choice[0]' });
    expect(engineSteps).toBe(stepsBefore);
  });
});

describe('/v1/models', () => {
  it('says which structured outputs a model supports', async () => {
    const card = (await client.models.retrieve('qwen3')) as OpenAI.Model & { capabilities?: unknown };
    expect(card.capabilities).toEqual({ text_generation: true, embeddings: false, structured_outputs: ['json_object', 'json_schema', 'regex', 'choice', 'ebnf'], tool_calls: true }); // qwen3-tiny sets tool_call_parser: hermes
  });
});
