// Constrained generation through the non-OpenAI front ends, real server and real clients: the
// /v1/ws WebSocket protocol (`ws`), conveyor.v1.GenerationService/Generate (grpc-js, clients
// generated from protos/) and Triton's generate extension (fetch). With the random tiny model,
// every output is valid under its constraint (choice, regex, JSON Schema checked with ajv when it
// finishes with stop), and a bad constraint is refused in that protocol's own error shape before
// the engine runs a step.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { LLM, startLlmServer } from '../support/generation.js';
import type { TestServer } from '../support/server.js';

const PROTOS = join(import.meta.dirname, '..', '..', 'protos');
type Reply = Record<string, unknown>;
type GrpcClient = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

let server: TestServer;
let model: LlmModel;
let generation: GrpcClient;
/** Steps that ran the model (a grammar that fails to compile is refused by a step message with no updates). */
let engineSteps = 0;

beforeAll(async () => {
  ({ server, model } = await startLlmServer());
  model.engine.onStep((step) => {
    if (step.updates.length > 0) engineSteps++;
  });
  const definition = loadSync(['generate.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTOS] });
  const root = grpc.loadPackageDefinition(definition) as unknown as { conveyor: { v1: { GenerationService: new (...a: unknown[]) => GrpcClient } } };
  generation = new root.conveyor.v1.GenerationService(server.grpcAddress, grpc.credentials.createInsecure());
}, 120_000);
afterAll(async () => {
  generation?.close();
  await server?.stop();
});

const COLOURS = ['red', 'green', 'blue'];
const CODE = '[A-Z]{3}-[0-9]{2}';
// Booleans, short enums and small integers: the random model's JSON ends in a few tokens.
const SCHEMA = {
  type: 'object',
  properties: { ok: { type: 'boolean' }, size: { enum: ['s', 'm', 'l'] }, n: { type: 'integer', minimum: 0, maximum: 9 } },
  required: ['ok', 'size', 'n'],
  additionalProperties: false,
};
const validateSchema = new Ajv({ strict: false }).compile(SCHEMA);
const SEEDS = [1, 2, 3];
const chat = (content: string) => [{ role: 'user', content }];

interface Outcome {
  readonly text: string;
  readonly finish: string;
}

/** JSON outputs: each valid when it finished with stop, cut short only by length, and at least one finished. */
function expectValidJson(outcomes: readonly Outcome[]): void {
  for (const { text, finish } of outcomes) {
    expect(['stop', 'length']).toContain(finish);
    if (finish === 'stop') expect(validateSchema(JSON.parse(text)), `${text}: ${JSON.stringify(validateSchema.errors)}`).toBe(true);
  }
  expect(outcomes.some((o) => o.finish === 'stop')).toBe(true);
}

/** The model ran no step for the refused requests, and the engine holds nothing. */
async function expectRefusedBeforeTheEngine(refuse: () => Promise<void>): Promise<void> {
  const before = engineSteps;
  await refuse();
  expect(engineSteps).toBe(before);
  expect(model.engine.numActive).toBe(0);
  expect(model.engine.stats?.kvCacheUsage ?? 0).toBe(0);
}

describe('WebSocket /v1/ws', () => {
  /** The frames for each id of the requests sent on one socket, once each has its done or error. */
  async function exchange(requests: Record<string, Record<string, unknown>>): Promise<Map<string, Reply[]>> {
    const socket = new WebSocket(`ws://127.0.0.1:${server.httpPort}/v1/ws`);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const frames = new Map<string, Reply[]>(Object.keys(requests).map((id) => [id, []]));
    const ended = new Promise<void>((resolve) => {
      let open = frames.size;
      socket.on('message', (data) => {
        const frame = JSON.parse(String(data)) as Reply & { id: string; type: string };
        frames.get(frame.id)?.push(frame);
        if ((frame.type === 'done' || frame.type === 'error') && --open === 0) resolve();
      });
    });
    for (const [id, request] of Object.entries(requests)) socket.send(JSON.stringify({ type: 'generate', id, model: LLM, ...request }));
    await ended;
    socket.close();
    return frames;
  }
  const outcome = (frames: Reply[]): Outcome => ({
    text: frames
      .filter((f) => f['type'] === 'delta')
      .map((f) => f['text'])
      .join(''),
    finish: String(frames.at(-1)!['finish_reason']),
  });

  it('choice, regex and json_schema outputs are valid, several constrained requests multiplexed on one socket', async () => {
    const requests: Record<string, Record<string, unknown>> = {};
    for (const seed of SEEDS) {
      requests[`choice${seed}`] = { messages: chat('Pick a colour.'), max_tokens: 50, seed, structured_outputs: { choice: COLOURS } };
      requests[`regex${seed}`] = { prompt: 'Code:', max_tokens: 50, seed, guided_regex: CODE };
      requests[`json${seed}`] = { messages: chat('Describe it.'), max_tokens: 120, seed, response_format: { type: 'json_schema', json_schema: { name: 'thing', schema: SCHEMA, strict: true } } };
    }
    const frames = await exchange(requests);
    for (const seed of SEEDS) {
      const choice = outcome(frames.get(`choice${seed}`)!);
      expect(choice.finish).toBe('stop');
      expect(COLOURS).toContain(choice.text);
      const regex = outcome(frames.get(`regex${seed}`)!);
      expect(regex.finish).toBe('stop');
      expect(regex.text).toMatch(new RegExp(`^${CODE}$`));
    }
    expectValidJson(SEEDS.map((seed) => outcome(frames.get(`json${seed}`)!)));
  });

  it('a bad constraint is an error frame naming the field, for its id only, and nothing runs', async () => {
    await expectRefusedBeforeTheEngine(async () => {
      const frames = await exchange({
        regex: { prompt: 'x', guided_regex: '([a-z]' },
        two: { prompt: 'x', response_format: { type: 'json_object' }, guided_choice: ['a'] },
        grammar: { prompt: 'x', structured_outputs: { grammar: 'root ::= missing_rule' } },
      });
      expect(frames.get('regex')).toEqual([{ type: 'error', id: 'regex', error: expect.objectContaining({ type: 'invalid_request_error', code: 'invalid_arg', param: 'guided_regex' }) }]);
      expect(frames.get('two')).toEqual([{ type: 'error', id: 'two', error: expect.objectContaining({ code: 'invalid_arg', param: 'guided_choice' }) }]);
      expect(frames.get('grammar')).toEqual([{ type: 'error', id: 'grammar', error: expect.objectContaining({ code: 'invalid_arg', param: 'structured_outputs.grammar' }) }]);
    });
  });
});

describe('gRPC conveyor.v1.GenerationService/Generate', () => {
  function generate(request: object): Promise<{ messages: Reply[]; error?: grpc.ServiceError }> {
    return new Promise((resolve) => {
      const messages: Reply[] = [];
      const call = generation['Generate']!(request) as grpc.ClientReadableStream<Reply>;
      call.on('data', (m: Reply) => messages.push(m));
      call.on('error', (error: grpc.ServiceError) => resolve({ messages, error }));
      call.on('end', () => resolve({ messages }));
    });
  }
  async function constrained(structured: object, seed: number, maxTokens = 50): Promise<Outcome> {
    const { messages, error } = await generate({ model: LLM, chat: { messages: chat('Answer.') }, sampling: { max_tokens: maxTokens, seed, structured_outputs: structured } });
    expect(error).toBeUndefined();
    const text = messages
      .filter((m) => m['event'] === 'delta')
      .map((m) => (m['delta'] as { text: string }).text)
      .join('');
    const finish = String((messages.at(-1)!['final'] as { finish_reason: string }).finish_reason);
    return { text, finish: finish.replace('FINISH_REASON_', '').toLowerCase() };
  }

  it('SamplingParameters.structured_outputs choice, regex and json give valid outputs', async () => {
    const outcomes = await Promise.all(
      SEEDS.flatMap((seed) => [constrained({ choice: { choices: COLOURS } }, seed), constrained({ regex: CODE }, seed), constrained({ json: JSON.stringify(SCHEMA) }, seed, 120)]),
    );
    for (let i = 0; i < SEEDS.length; i++) {
      const [choice, regex] = [outcomes[3 * i]!, outcomes[3 * i + 1]!];
      expect(choice).toMatchObject({ finish: 'stop' });
      expect(COLOURS).toContain(choice.text);
      expect(regex.finish).toBe('stop');
      expect(regex.text).toMatch(new RegExp(`^${CODE}$`));
    }
    expectValidJson(outcomes.filter((_, i) => i % 3 === 2));
  });

  it('a bad constraint is INVALID_ARGUMENT with the field in conveyor-error-param, and nothing runs', async () => {
    await expectRefusedBeforeTheEngine(async () => {
      const cases: [object, string][] = [
        [{ regex: '([a-z]' }, 'structured_outputs.regex'],
        [{ json: '{"type": "integer", "minimum": "zero"}' }, 'structured_outputs.json'],
        [{ grammar: 'root ::= missing_rule' }, 'structured_outputs.grammar'], // refused by the engine's compile, named as parsing would
      ];
      for (const [structured, param] of cases) {
        const { messages, error } = await generate({ model: LLM, text: 'x', sampling: { max_tokens: 4, structured_outputs: structured } });
        expect(messages).toEqual([]);
        expect(error?.code, JSON.stringify(structured)).toBe(grpc.status.INVALID_ARGUMENT);
        expect(error!.metadata.get('conveyor-error-param')).toEqual([param]);
      }
    });
  });
});

describe('Triton generate', () => {
  const post = (suffix: string, body: unknown) => fetch(`${server.http}/v2/models/${LLM}/${suffix}`, { method: 'POST', body: JSON.stringify(body) });
  async function constrained(parameters: Record<string, unknown>, seed: number, maxTokens = 50): Promise<Outcome> {
    const response = await post('generate', { text_input: 'Answer:', exclude_input_in_output: true, return_finish_reason: true, parameters: { max_tokens: maxTokens, seed, ...parameters } });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { text_output: string; finish_reason: string };
    return { text: body.text_output, finish: body.finish_reason };
  }

  it('structured_outputs (object or JSON text) and guided_* parameters give valid outputs', async () => {
    for (const seed of SEEDS) {
      for (const parameters of [{ structured_outputs: { choice: COLOURS } }, { guided_choice: JSON.stringify(COLOURS) }]) {
        const choice = await constrained(parameters, seed);
        expect(choice.finish).toBe('stop');
        expect(COLOURS).toContain(choice.text);
      }
      const regex = await constrained({ structured_outputs: JSON.stringify({ regex: CODE }) }, seed);
      expect(regex.finish).toBe('stop');
      expect(regex.text).toMatch(new RegExp(`^${CODE}$`));
    }
    expectValidJson(await Promise.all(SEEDS.map((seed) => constrained({ guided_json: JSON.stringify(SCHEMA) }, seed, 120))));
  });

  it('a bad constraint is a 400 whose error names the parameter, on /generate and /generate_stream, and nothing runs', async () => {
    await expectRefusedBeforeTheEngine(async () => {
      const cases: [string, Record<string, unknown>, RegExp][] = [
        ['generate', { guided_regex: '([a-z]' }, /guided_regex/],
        ['generate_stream', { structured_outputs: { regex: '([a-z]' } }, /structured_outputs\.regex/],
        ['generate', { guided_choice: '[]' }, /guided_choice/],
        ['generate', { guided_json: '{"type": "object"}', guided_regex: 'a' }, /guided_regex|guided_json/],
        ['generate', { guided_grammar: 'root ::= missing_rule' }, /guided_grammar/],
      ];
      for (const [suffix, parameters, message] of cases) {
        const response = await post(suffix, { text_input: 'x', stream: suffix === 'generate_stream', parameters: { max_tokens: 4, ...parameters } });
        expect(response.status, JSON.stringify(parameters)).toBe(400);
        expect(((await response.json()) as { error: string }).error).toMatch(message);
      }
    });
  });
});
