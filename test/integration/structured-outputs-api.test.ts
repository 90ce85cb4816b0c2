// Structured outputs at the API, through the official openai SDK against the real server: what
// `chat.completions.parse` with a zod schema sends is accepted and becomes the right GrammarSpec
// on the engine's GenerateRequest; every bad constraint is a 400 naming `param`, and nothing
// reaches the engine; and, through the engine's mask, every output the tiny random model finishes
// is valid: parse returns a schema-valid object, json_object parses, choice and regex hold; and
// greedy unconstrained answers do not change when constrained requests share their batches.
import { Ajv } from 'ajv';
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
    // Cut short by max_tokens ("length"), so the SDK's parse is not asked to read it.
    const outcome = await client.chat.completions.create({ model: 'qwen3', messages: user, response_format: zodResponseFormat(Person, 'person'), max_tokens: 8 });
    expect(outcome.choices[0]!.finish_reason).toBe('length');
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
    // Canonical: keywords sorted at every level, the properties in the schema's order (the output's).
    expect(request.grammar).toMatchObject({ schema: expect.stringMatching(/^\{"\$schema":.*"additionalProperties":false,"properties":\{"name":\{"type":"string"\},"age":/) });
  });

  it('returns a parsed object valid under the schema', async () => {
    // Short enums, booleans and small integers: the random model's JSON ends in a few tokens.
    const Answer = z.object({ ok: z.boolean(), size: z.enum(['s', 'm', 'l']), n: z.number().int().min(0).max(9), tags: z.array(z.enum(['a', 'b'])).max(2) });
    const format = zodResponseFormat(Answer, 'answer');
    const validate = new Ajv({ strict: false }).compile(format.json_schema.schema!);
    for (const seed of [1, 2, 3]) {
      const completion = await client.chat.completions.parse({ model: 'qwen3', messages: user, response_format: format, max_tokens: 120, seed });
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe('stop');
      expect(choice.message.parsed).not.toBeNull();
      expect(Answer.parse(choice.message.parsed)).toEqual(choice.message.parsed);
      expect(validate(JSON.parse(choice.message.content!)), JSON.stringify(validate.errors)).toBe(true);
    }
  });

  it('holds string lengths the string guard counts: outputs within them, and a maxLength past the counted grammar accepted', async () => {
    // Past 8 characters the grammar writes any string and the guard counts (src/grammar/string-guard.ts); its bound ends each string.
    const Codes = z.object({ code: z.string().min(10).max(12), more: z.array(z.string().min(9).max(14)).max(2) });
    const format = zodResponseFormat(Codes, 'codes');
    const validate = new Ajv({ strict: false }).compile(format.json_schema.schema!);
    for (const seed of [4, 5]) {
      const completion = await client.chat.completions.parse({ model: 'qwen3', messages: user, response_format: format, max_tokens: 200, seed });
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe('stop');
      expect(validate(JSON.parse(choice.message.content!)), JSON.stringify(validate.errors)).toBe(true);
    }
    // 5,000 characters was refused by name before the guard (past the 1,024 a counted grammar takes):
    // now served, cut by max_tokens or (the random model may close the string at once) finished valid.
    const long = await client.chat.completions.create({ model: 'qwen3', messages: user, response_format: zodResponseFormat(z.object({ text: z.string().max(5000) }), 'long'), max_tokens: 8 });
    const choice = long.choices[0]!;
    expect(['length', 'stop']).toContain(choice.finish_reason);
    if (choice.finish_reason === 'stop') expect((JSON.parse(choice.message.content!) as { text: string }).text.length).toBeLessThanOrEqual(5000);
  });

  it("keys come in the schema's order, not sorted: a schema listing reasoning before answer gets reasoning first", async () => {
    const Solved = z.object({ reasoning: z.string().max(30), answer: z.number().int().min(0).max(9) });
    const format = zodResponseFormat(Solved, 'solved');
    for (const seed of [21, 22, 23]) {
      const completion = await client.chat.completions.create({ model: 'qwen3', messages: user, response_format: format, max_tokens: 60, seed });
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe('stop');
      expect(Object.keys(JSON.parse(choice.message.content!) as object)).toEqual(['reasoning', 'answer']);
    }
  });

  it('"x-property-order": "any" in the schema: keys in the order the output chooses, each object still valid', async () => {
    const Flags = z.object({ a: z.boolean(), b: z.boolean(), c: z.enum(['x', 'y']), d: z.number().int().min(0).max(9) });
    const format = zodResponseFormat(Flags, 'flags');
    const schema = { ...format.json_schema.schema!, 'x-property-order': 'any' };
    const validate = new Ajv({ strict: false }).compile(format.json_schema.schema!);
    const orders = new Set<string>();
    for (const seed of [11, 12, 13, 14, 15, 16]) {
      const completion = await client.chat.completions.create({
        model: 'qwen3',
        messages: user,
        response_format: { type: 'json_schema', json_schema: { name: 'flags', strict: true, schema } },
        max_tokens: 60,
        seed,
      });
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe('stop');
      const document = JSON.parse(choice.message.content!) as Record<string, unknown>;
      expect(validate(document), JSON.stringify(validate.errors)).toBe(true);
      orders.add(Object.keys(document).join(','));
    }
    // The random model picks among the keys: some output is out of the schema's order.
    expect(
      [...orders].some((order) => order !== 'a,b,c,d'),
      [...orders].join(' | '),
    ).toBe(true);
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

describe('constrained outputs of the tiny random model', () => {
  const chat = (extra: Record<string, unknown>, seed: number) =>
    client.chat.completions.create({ model: 'qwen3', messages: user, max_tokens: 200, seed, ...extra } as OpenAI.ChatCompletionCreateParamsNonStreaming);

  it('json_object: every finished output is a JSON object', async () => {
    // Greedy: sampled free JSON may wander past max_tokens; the mask alone decides what is valid.
    const completion = await chat({ response_format: { type: 'json_object' }, temperature: 0 }, 1);
    const choice = completion.choices[0]!;
    if (choice.finish_reason === 'stop') {
      const value = JSON.parse(choice.message.content!) as unknown;
      expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
    } else expect(choice.finish_reason).toBe('length');
  });

  it('structured_outputs.choice: the output is one of the choices', async () => {
    for (const seed of [1, 2, 3, 4]) {
      const completion = await chat({ structured_outputs: { choice: ['red', 'green', 'blue'] } }, seed);
      expect(completion.choices[0]!.finish_reason).toBe('stop');
      expect(['red', 'green', 'blue']).toContain(completion.choices[0]!.message.content);
    }
  });

  it('structured_outputs.regex: the output matches, through chat and completions', async () => {
    const completion = await chat({ structured_outputs: { regex: '[A-Z]{3}-[0-9]{2}' } }, 5);
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.choices[0]!.message.content).toMatch(/^[A-Z]{3}-[0-9]{2}$/);
    const text = await client.completions.create({
      model: 'qwen3',
      prompt: 'Code:',
      max_tokens: 50,
      seed: 6,
      structured_outputs: { regex: '(yes|no), [0-9]' },
    } as OpenAI.CompletionCreateParamsNonStreaming);
    expect(text.choices[0]!.finish_reason).toBe('stop');
    expect(text.choices[0]!.text).toMatch(/^(yes|no), [0-9]$/);
  });

  it('a grammar the engine cannot compile is a 400 naming the field, and holds no blocks', async () => {
    const error = await chat({ guided_grammar: 'root ::= missing_rule' }, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, param: 'guided_grammar', type: 'invalid_request_error' });
    expect((error as BadRequestError).message).toMatch(/cannot be compiled/);
    expect(model.engine.numActive).toBe(0);
    expect(model.engine.stats?.kvCacheUsage ?? 0).toBe(0);
  });
});

describe('continuous batching with constrained neighbours', () => {
  it('greedy unconstrained outputs are identical with and without constrained requests in the same batches', async () => {
    const free = ['Hello!', 'Tell me a story', '日本語 🙂'].map((content) => ({
      model: 'qwen3',
      messages: [{ role: 'user' as const, content }],
      temperature: 0,
      max_tokens: 40,
      ignore_eos: true,
    }));
    const run = (bodies: readonly object[]) => Promise.all(bodies.map((body) => client.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming)));
    const alone = await run(free);

    // Steps that masked some rows while also decoding unconstrained ones: the neighbours did share batches.
    let mixedSteps = 0;
    model.engine.onStep((step) => {
      if (step.grammarMasks && step.updates.length > step.grammarMasks.count) mixedSteps++;
    });
    const constrained = [
      { response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } } }, seed: 1 },
      { structured_outputs: { choice: ['red', 'green', 'blue'] }, seed: 2 },
      { structured_outputs: { regex: '[a-z]{4,12}' }, seed: 3 },
      { response_format: { type: 'json_object' }, seed: 4 },
    ].map((extra) => ({ model: 'qwen3', messages: user, max_tokens: 60, ...extra }));
    const [together] = await Promise.all([run(free), run(constrained)]);

    expect(mixedSteps).toBeGreaterThan(0);
    for (let i = 0; i < free.length; i++) {
      expect(together[i]!.choices[0]!.message.content).toBe(alone[i]!.choices[0]!.message.content);
      expect(together[i]!.usage?.completion_tokens).toBe(40);
    }
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
    ['an unknown x-property-order', { guided_json: { type: 'object', 'x-property-order': 'sorted' } }, 'guided_json'],
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
    expect(card.capabilities).toEqual({ text_generation: true, embeddings: false, structured_outputs: ['json_object', 'json_schema', 'regex', 'choice', 'ebnf'], tool_calls: true, reasoning: false }); // qwen3-tiny sets tool_call_parser: hermes
  });
});
