// The grammar compile bound (--structured-outputs-compile-timeout-secs) through the official
// OpenAI SDK on the real server: a response_format json_schema whose compile runs past the bound
// is a BadRequestError (400) naming the flag, while an ordinary request sent beside it answers;
// the refusal is cached, and the next new schema compiles. The slow schema is a pattern of 160
// wide character classes, one grammar state each that nearly every token of the tiny model's
// Qwen3 vocabulary may enter: 10 of them took 3.7 s and 40 took 14 s to compile on the loaded
// test machine (growing with the classes), against a bound of 1 s that a small object schema
// (50 ms) meets with room under load. The probe is stopped at the bound, so the test never waits
// for the compile.
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const BOUND_SECS = 1;
const letters = 'abcdefghijklmnopqrstuvwxyz';
const SLOW_SCHEMA = { type: 'string', pattern: `^${Array.from({ length: 160 }, (_, i) => `[^${letters[i % 26]}]`).join('')}$` };

let server: TestServer;
let client: OpenAI;

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  server = await startTestServer(repository, ['--structured-outputs-compile-timeout-secs', String(BOUND_SECS)]);
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 120_000);
afterAll(async () => server?.stop());

const constrained = (schema: object) =>
  client.chat.completions.create({
    model: 'qwen3',
    messages: [{ role: 'user', content: 'Answer.' }],
    max_tokens: 8,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: schema as Record<string, unknown>, strict: true } },
  });

it('a schema past the compile bound is a BadRequestError naming the flag; a request beside it answers', async () => {
  const [slow, ordinary] = await Promise.allSettled([
    constrained(SLOW_SCHEMA),
    client.chat.completions.create({ model: 'qwen3', messages: [{ role: 'user', content: 'Hello.' }], max_tokens: 4, temperature: 0 }),
  ]);
  expect(ordinary.status).toBe('fulfilled');
  const answer = (ordinary as PromiseFulfilledResult<OpenAI.Chat.ChatCompletion>).value;
  expect(answer.choices[0]!.finish_reason).toBe('length');
  expect(answer.usage!.completion_tokens).toBe(4);

  expect(slow.status).toBe('rejected');
  const error = (slow as PromiseRejectedResult).reason as unknown;
  expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  expect((error as InstanceType<typeof OpenAI.BadRequestError>).status).toBe(400);
  expect((error as Error).message).toContain(`--structured-outputs-compile-timeout-secs (${BOUND_SECS} s)`);

  // Refused again from the cache, and a new small schema still compiles and constrains.
  await expect(constrained(SLOW_SCHEMA)).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  const ok = await constrained({ type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false });
  expect(ok.choices[0]!.message.content).toMatch(/^\{("ok": (true|false)\})?/);
}, 120_000);
