// The OpenAI routes' server options on the real server: --api-key (AuthenticationError; health
// stays open; test/integration/access-control.test.ts checks every other route), --cors-allow-origin (preflights, headers on streams), and
// --max-queued-requests (503 with retry-after once the engine's queue holds the bound), plus
// `serve --model <dir>` serving one Hugging Face export with no repository.
import { request as httpRequest, type ClientRequest } from 'node:http';
import { join } from 'node:path';
import OpenAI, { AuthenticationError, InternalServerError } from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { parseServerOptions } from '../../src/config/server-options.js';
import { modelNameOf } from '../../src/repository/single-model.js';
import { startServer } from '../../src/main.js';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const KEY = 'sk-test-123';
const ORIGIN = 'https://app.example';
let server: TestServer;
let model: LlmModel;

beforeAll(async () => {
  // One sequence at a time: a second generation waits in the engine's queue, deterministically.
  const config = configOf('qwen3-tiny', 'qwen3', (t) => t.replace('string_value: "32"', 'string_value: "1"'));
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config }]);
  server = await startTestServer(repository, ['--api-key', KEY, '--cors-allow-origin', ORIGIN, '--max-queued-requests', '1']);
  model = server.service.llmModel('qwen3');
}, 120_000);
afterAll(async () => server?.stop());

const sdk = (apiKey: string) => new OpenAI({ baseURL: `${server.http}/v1`, apiKey, maxRetries: 0 });
const chat = { model: 'qwen3', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 2 };

describe('--api-key', () => {
  it('refuses a wrong or missing key with AuthenticationError and accepts the right one', async () => {
    const wrong = await sdk('sk-wrong')
      .chat.completions.create(chat)
      .catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(AuthenticationError);
    expect(wrong).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'authentication_error' });
    const missing = await fetch(`${server.http}/v1/models`);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({ error: { message: expect.stringContaining('API key'), type: 'authentication_error', param: null, code: 'invalid_api_key' } });
    expect((await sdk(KEY).models.list()).data.map((m) => m.id)).toEqual(['qwen3']);
    expect((await sdk(KEY).chat.completions.create(chat)).choices).toHaveLength(1);
  });

  it('guards the /v1/ws upgrade with the same keys', async () => {
    const { WebSocket } = await import('ws');
    const url = `${server.http.replace('http', 'ws')}/v1/ws`;
    const refused = await new Promise<number>((resolve) => {
      const socket = new WebSocket(url);
      socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      socket.on('open', () => resolve(101));
    });
    expect(refused).toBe(401);
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = new WebSocket(url, { headers: { authorization: `Bearer ${KEY}` } });
      socket.on('open', () => {
        socket.close();
        resolve(true);
      });
      socket.on('unexpected-response', () => resolve(false));
    });
    expect(accepted).toBe(true);
  });

  it('leaves health and model readiness open, and guards the KServe and tokenizer routes too', async () => {
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(200);
    expect((await fetch(`${server.http}/v2/models/qwen3/ready`)).status).toBe(200);
    expect((await fetch(`${server.http}/v2/models/qwen3`)).status).toBe(401);
    expect((await fetch(`${server.http}/v2/models/qwen3`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200);
    const tokenize = await fetch(`${server.http}/tokenize`, { method: 'POST', body: JSON.stringify({ model: 'qwen3', prompt: 'hi' }) });
    expect(tokenize.status).toBe(401);
    expect(await tokenize.json()).toMatchObject({ error: { type: 'authentication_error', code: 'invalid_api_key' } });
  });
});

describe('--cors-allow-origin', () => {
  it('answers a preflight from an allowed origin', async () => {
    const response = await fetch(`${server.http}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(response.headers.get('access-control-allow-methods')).toContain('POST');
    expect(response.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
  });

  it('adds the headers to JSON and streamed answers for allowed origins only', async () => {
    const headers = { origin: ORIGIN, authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    const list = await fetch(`${server.http}/v1/models`, { headers });
    expect(list.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const stream = await fetch(`${server.http}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ ...chat, stream: true }) });
    expect(stream.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(stream.headers.get('access-control-expose-headers')).toContain('x-request-id');
    expect(stream.headers.get('x-request-id')).toMatch(/^chatcmpl-/);
    expect(await stream.text()).toMatch(/data: \[DONE\]\n\n$/);
    const other = await fetch(`${server.http}/v1/models`, { headers: { ...headers, origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('--max-queued-requests', () => {
  /** A long streaming generation on a connection of its own, to be dropped later. */
  function longStream(): { request: ClientRequest; firstChunk: Promise<void> } {
    const request = httpRequest(`${server.http}/v1/chat/completions`, { method: 'POST', agent: false, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' } });
    const firstChunk = new Promise<void>((resolve) => request.on('response', (response) => response.once('data', () => resolve())));
    request.on('error', () => undefined);
    request.end(JSON.stringify({ ...chat, max_tokens: 2000, ignore_eos: true, stream: true }));
    return { request, firstChunk };
  }

  const until = async (ok: () => boolean): Promise<void> => {
    await vi.waitFor(() => expect(ok()).toBe(true), { timeout: 30_000, interval: 10 });
  };

  it('answers 503 with retry-after once the bound of generations waits for a first token', async () => {
    const running = longStream();
    await running.firstChunk;
    const waiting = longStream();
    await until(() => model.engine.numActive === 2);
    expect(model.engine.numActive).toBe(2);
    const shed = await sdk(KEY)
      .chat.completions.create(chat)
      .catch((e: unknown) => e);
    expect(shed).toBeInstanceOf(InternalServerError);
    expect(shed).toMatchObject({ status: 503, type: 'server_error', code: 'service_unavailable' });
    // The wait comes from the measured drain rate (openai-compat/retry-after.ts): whole seconds ≥ 1, and milliseconds.
    const headers = (shed as InternalServerError).headers;
    expect(Number(headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(headers.get('retry-after'))).toBe(Math.max(1, Math.ceil(Number(headers.get('retry-after-ms')) / 1000)));
    running.request.destroy();
    await waiting.firstChunk;
    waiting.request.destroy();
    await until(() => model.engine.numActive === 0);
    expect((await sdk(KEY).chat.completions.create(chat)).choices).toHaveLength(1);
  });
});

describe('serve --model', () => {
  it('serves one Hugging Face export directory under its served name, no repository needed', async () => {
    const dir = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
    expect(modelNameOf('/models/Qwen3 0.6B ONNX/')).toBe('Qwen3-0.6B-ONNX');
    const options = parseServerOptions([
      '--model',
      dir,
      '--served-model-name',
      'tiny-chat',
      '--tool-call-parser',
      'hermes',
      '--host',
      '127.0.0.1',
      '--http-port',
      '0',
      '--grpc-port',
      '0',
      '--metrics-port',
      '0',
    ]);
    const single = await startServer(options, { log: () => undefined });
    try {
      const client = new OpenAI({ baseURL: `http://127.0.0.1:${single.httpPort}/v1`, apiKey: 'unused', maxRetries: 0 });
      const models = (await client.models.list()).data;
      expect(models.map((m) => m.id)).toEqual(['tiny-chat']);
      // --tool-call-parser reaches the generated config: the card says the model serves tool calls.
      expect(models[0]).toMatchObject({ capabilities: { tool_calls: true } });
      const completion = await client.chat.completions.create({ ...chat, model: 'tiny-chat' });
      expect(completion).toMatchObject({ model: 'tiny-chat', choices: [{ finish_reason: expect.stringMatching(/stop|length/) }] });
    } finally {
      await single.stop();
    }
  }, 120_000);
});
