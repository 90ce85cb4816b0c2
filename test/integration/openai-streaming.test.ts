// The OpenAI SSE stream at the byte level with plain fetch and node:http (exact `data: {...}\n\n`
// framing, the role in the first chunk, `data: [DONE]` last, events flushed while generation
// runs), and client disconnects: every generation behind the request is aborted and its KV blocks
// come back. Disconnects use node:http on a connection of their own, so dropping it is exactly a
// socket close (fetch's pool would keep extra connections open and stall the server's shutdown).
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SequenceUpdate } from '../../src/contracts/generate.js';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let model: LlmModel;
const finished: SequenceUpdate[] = [];

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  server = await startTestServer(repository);
  model = server.service.llmModel('qwen3');
  model.engine.onStep((step) => finished.push(...step.updates.filter((u) => u.finishReason !== null)));
}, 120_000);
afterAll(async () => server?.stop());

const chatBody = (extra: Record<string, unknown>) => JSON.stringify({ model: 'qwen3', messages: [{ role: 'user', content: 'Stream please' }], stream: true, ...extra });

interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Resolves with the frames read so far once `enough` says stop or the body ends. */
  frames(enough?: (frames: string[]) => boolean): Promise<string[]>;
  /** The whole body as received. */
  text(): Promise<string>;
  /** Drops the connection, as a client that goes away does. */
  disconnect(): void;
}

/** A POST over its own connection (no keep-alive pool), so a disconnect is exactly a socket close. */
function post(body: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${server.http}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (response) => {
      response.setEncoding('utf8');
      let buffered = '';
      const frames: string[] = [];
      let ended = false;
      let wake: (() => void) | undefined;
      response.on('data', (data: string) => {
        buffered += data;
        wake?.();
      });
      response.on('end', () => {
        ended = true;
        wake?.();
      });
      const next = () => new Promise<void>((r) => (wake = r));
      resolve({
        status: response.statusCode!,
        headers: response.headers,
        async frames(enough = () => false) {
          while (true) {
            let end: number;
            while ((end = buffered.indexOf('\n\n')) >= 0) {
              frames.push(buffered.slice(0, end));
              buffered = buffered.slice(end + 2);
            }
            if (enough(frames) || ended) return frames;
            await next();
          }
        },
        async text() {
          while (!ended) await next();
          return buffered;
        },
        disconnect: () => request.destroy(),
      });
    });
    request.on('error', reject);
    request.end(body);
  });
}

async function until(ok: () => boolean): Promise<void> {
  await vi.waitFor(() => expect(ok()).toBe(true), { timeout: 30_000, interval: 20 });
}

/** No generation left and every block back (prefix-cached blocks count as free). */
const settled = () => until(() => model.engine.numActive === 0 && (model.engine.stats?.kvCacheUsage ?? 0) === 0);

describe('SSE framing', () => {
  it('writes exactly `data: <json>\\n\\n` frames, role first, usage with choices [], then [DONE]', async () => {
    const body = chatBody({ max_tokens: 8, ignore_eos: true, temperature: 0, stream_options: { include_usage: true } });
    const response = await fetch(`${server.http}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    const raw = Buffer.from(await response.arrayBuffer()).toString('utf8');
    const frames = raw.split(/(?<=\n\n)/);
    expect(frames.join('')).toBe(raw);
    for (const frame of frames) expect(frame).toMatch(/^data: [^\n]+\n\n$/);
    expect(frames.at(-1)).toBe('data: [DONE]\n\n');
    // biome-ignore lint/suspicious/noExplicitAny: asserts on the wire JSON field by field, as response.json() does in tests
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.slice('data: '.length, -2)) as Record<string, any>);
    // Compact JSON: the frame is the serialization itself, nothing pretty-printed.
    chunks.forEach((c, i) => expect(frames[i]).toBe(`data: ${JSON.stringify(c)}\n\n`));
    const [first, ...rest] = chunks;
    expect(Object.keys(first!)).toEqual(['id', 'object', 'created', 'model', 'system_fingerprint', 'choices', 'usage']);
    expect(first).toMatchObject({ object: 'chat.completion.chunk', model: 'qwen3', usage: null });
    expect(first!.choices).toEqual([{ index: 0, delta: { role: 'assistant', content: expect.any(String) }, logprobs: null, finish_reason: null }]);
    const content = rest.slice(0, -1);
    expect(content.slice(0, -1).every((c) => c.choices[0].finish_reason === null && !('role' in c.choices[0].delta))).toBe(true);
    expect(content.at(-1)!.choices[0].finish_reason).toBe('length');
    expect(rest.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 8 } });
  });

  it('flushes each event while the generation is still running', async () => {
    const response = await post(chatBody({ max_tokens: 2000, ignore_eos: true }));
    const frames = await response.frames((f) => f.length >= 2);
    expect(frames[0]).toMatch(/^data: \{/);
    // Two chunks arrived, and the engine is still generating the same request.
    expect(model.engine.numActive).toBe(1);
    response.disconnect();
    await settled();
  });

  it('answers a refused stream with a plain JSON error before any SSE header', async () => {
    const response = await post(chatBody({ temperature: 'hot' }));
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(await response.text())).toMatchObject({ error: { param: 'temperature', type: 'invalid_request_error' } });
  });
});

describe('client disconnect', () => {
  it('aborts every choice of a stream within a step and returns their KV blocks', async () => {
    await settled();
    const before = finished.length;
    const response = await post(chatBody({ n: 2, max_tokens: 2000, ignore_eos: true }));
    await response.frames((f) => f.length >= 4);
    expect(model.engine.numActive).toBe(2);
    response.disconnect();
    // The engine reports each aborted request in a step message; the blocks are free by then.
    await until(() => finished.length >= before + 2);
    await settled();
    const ended = finished.slice(before);
    expect(ended.map((u) => u.finishReason)).toEqual(['abort', 'abort']);
    for (const update of ended) expect(update.numOutputTokens).toBeLessThan(200);
    expect(model.engine.numActive).toBe(0);
    expect(model.engine.stats!.kvCacheUsage).toBe(0);
  });

  it('aborts a non-streaming request whose client went away', async () => {
    await settled();
    const before = finished.length;
    const request = httpRequest(`${server.http}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } });
    request.on('error', () => undefined);
    request.end(chatBody({ stream: false, max_tokens: 2000, ignore_eos: true }));
    await until(() => model.engine.numActive > 0);
    expect(model.engine.numActive).toBe(1);
    request.destroy();
    await until(() => finished.length > before);
    await settled();
    expect(finished.slice(before).map((u) => u.finishReason)).toEqual(['abort']);
    expect(model.engine.stats!.kvCacheUsage).toBe(0);
  });
});
