// SSE keep-alive comments (--sse-keep-alive-interval, vLLM's `: keep-alive`) on every SSE route:
// OpenAI chat / completions / Responses, Anthropic Messages and Triton's generate_stream. The
// model runs one sequence at a time (max_num_seqs 1) and a long generation holds it, so each
// stream waits in the queue: it gets its 200 and keep-alive comments before any event, then, once
// the long one is aborted, its events as usual (the official SDKs read through the comments). A
// request refused before it waited still gets its plain HTTP error, and with the interval off no
// comment is sent.

import Anthropic from '@anthropic-ai/sdk';
import { request as httpRequest } from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let quiet: TestServer;

beforeAll(async () => {
  const oneAtATime = (text: string) => text.replace(/key: "max_num_seqs" value: \{ string_value: "\d+" \}/, 'key: "max_num_seqs" value: { string_value: "1" }');
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3', oneAtATime) }]);
  server = await startTestServer(repository, ['--sse-keep-alive-interval', '0.02']);
  quiet = await startTestServer(repository, ['--sse-keep-alive-interval', '0']);
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await quiet?.stop();
});

interface RawStream {
  readonly status: number;
  readonly headers: Record<string, unknown>;
  /** Everything read so far, exactly as sent. */
  text(): string;
  /** Resolves once what was read satisfies `check` (or the body ended). */
  until(check: (text: string) => boolean): Promise<string>;
  readonly ended: Promise<string>;
  disconnect(): void;
}

/** A POST read as raw text on its own connection, so comments are seen as sent. */
function postRaw(url: string, body: object): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (response) => {
      response.setEncoding('utf8');
      let text = '';
      let done = false;
      const waiters: { check: (text: string) => boolean; resolve: (text: string) => void }[] = [];
      const wake = (): void => {
        for (const waiter of [...waiters]) {
          if (!done && !waiter.check(text)) continue;
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(text);
        }
      };
      const ended = new Promise<string>((resolveEnd) => {
        const finish = (): void => {
          done = true;
          wake();
          resolveEnd(text);
        };
        response.on('end', finish);
        response.on('error', finish);
        response.on('close', finish);
      });
      response.on('data', (chunk: string) => {
        text += chunk;
        wake();
      });
      resolve({
        status: response.statusCode ?? 0,
        headers: response.headers,
        text: () => text,
        until: (check) => (done || check(text) ? Promise.resolve(text) : new Promise((r) => waiters.push({ check, resolve: r }))),
        ended,
        disconnect: () => request.destroy(),
      });
    });
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
}

const KEEP_ALIVE = ': keep-alive\n\n';
const LONG = { model: 'qwen3', prompt: 'Hold the engine.', max_tokens: 4000, ignore_eos: true, stream: true };

/** A long streamed generation that holds the model's one sequence slot until disconnected. */
async function holdEngine(target: TestServer): Promise<RawStream> {
  const long = await postRaw(`${target.http}/v1/completions`, LONG);
  await long.until((text) => text.includes('data: '));
  return long;
}

const ROUTES: readonly { name: string; path: string; body: object; firstEvent: string }[] = [
  { name: 'chat/completions', path: '/v1/chat/completions', body: { model: 'qwen3', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3, stream: true }, firstEvent: 'data: ' },
  { name: 'completions', path: '/v1/completions', body: { model: 'qwen3', prompt: 'Hi', max_tokens: 3, stream: true }, firstEvent: 'data: ' },
  { name: 'responses', path: '/v1/responses', body: { model: 'qwen3', input: 'Hi', max_output_tokens: 3, stream: true }, firstEvent: 'event: response.created' },
  { name: 'messages', path: '/v1/messages', body: { model: 'qwen3', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3, stream: true }, firstEvent: 'event: message_start' },
  { name: 'generate_stream', path: '/v2/models/qwen3/generate_stream', body: { text_input: 'Hi', max_tokens: 3 }, firstEvent: 'data: ' },
];

describe('a stream waiting in the queue', () => {
  it('gets its 200 and keep-alive comments before its first event on every SSE route, then its events', async () => {
    const long = await holdEngine(server);
    const waiting = await Promise.all(ROUTES.map(async (route) => ({ route, stream: await postRaw(`${server.http}${route.path}`, route.body) })));
    for (const { route, stream } of waiting) {
      expect(stream.status, route.name).toBe(200);
      expect(String(stream.headers['content-type']), route.name).toMatch(/^text\/event-stream/);
    }
    // Two comments each: the interval repeats while the request still waits.
    for (const { stream } of waiting) await stream.until((text) => text.split(KEEP_ALIVE).length > 2);
    for (const { route, stream } of waiting) expect(stream.text().startsWith(`${KEEP_ALIVE}${KEEP_ALIVE}`), route.name).toBe(true);
    long.disconnect();
    for (const { route, stream } of waiting) {
      const text = (await stream.ended).replaceAll(KEEP_ALIVE, '');
      expect(text.startsWith(route.firstEvent), route.name).toBe(true);
      // No error event in any protocol's shape (Responses' objects carry `"error":null`).
      expect(text, route.name).not.toMatch(/event: error|"error":\s*["{]/);
    }
  }, 60_000);

  it('is read through by the official OpenAI and Anthropic SDKs as if the comments were not there', async () => {
    const long = await holdEngine(server);
    const openai = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: server.http, apiKey: 'unused', maxRetries: 0 });
    const chat = openai.chat.completions.create({ model: 'qwen3', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3, stream: true });
    const message = anthropic.messages.stream({ model: 'qwen3', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 });
    // Both wait behind the long generation; a probe stream shows the keep-alive interval has passed for them too.
    const probe = await postRaw(`${server.http}/v1/completions`, { model: 'qwen3', prompt: 'Hi', max_tokens: 1, stream: true });
    await probe.until((text) => text.split(KEEP_ALIVE).length > 3);
    long.disconnect();
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await chat) chunks.push(chunk);
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('length');
    const final = await message.finalMessage();
    expect(final.stop_reason).toBe('max_tokens');
    await probe.ended;
  }, 60_000);
});

describe('without a wait or without the interval', () => {
  it('a request refused before it waited keeps its plain HTTP error', async () => {
    const refused = await postRaw(`${server.http}/v1/chat/completions`, { model: 'qwen3', messages: 'not a list', stream: true });
    expect(refused.status).toBe(400);
    expect(JSON.parse(await refused.ended).error.param).toBe('messages');
    const missing = await postRaw(`${server.http}/v2/models/nope/generate_stream`, { text_input: 'Hi' });
    expect(missing.status).toBeGreaterThanOrEqual(400);
    expect(await missing.ended).not.toContain(KEEP_ALIVE);
  });

  it('--sse-keep-alive-interval 0 sends no comment however long the wait', async () => {
    const long = await holdEngine(quiet);
    let answered = false;
    const pending = postRaw(`${quiet.http}/v1/completions`, { model: 'qwen3', prompt: 'Hi', max_tokens: 2, stream: true }).then((stream) => {
      answered = true;
      return stream;
    });
    // The long stream's own progress while this one waits: many of its events go by, and not even a status line for the waiting one.
    const seen = long.text().length;
    await long.until((text) => text.length > seen + 4000);
    expect(answered).toBe(false);
    long.disconnect();
    const waiting = await pending;
    const text = await waiting.ended;
    expect(waiting.status).toBe(200);
    expect(text).not.toContain(': keep-alive');
    expect(text.startsWith('data: ')).toBe(true);
  }, 60_000);
});
