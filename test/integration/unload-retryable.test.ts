// A model being unloaded under traffic: while a running stream holds the unload in UNLOADING,
// new requests for that model are refused as retryable in every protocol (OpenAI 503 with
// retry-after, KServe 503, gRPC UNAVAILABLE, a WebSocket service_unavailable frame), never 404;
// once the unload is done the model is simply not loaded (404 on the OpenAI routes). And the
// in-process drain: a stream cut at the exit timeout leaves no KV blocks behind.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';
import { generateStream, grpcClients, openWebSocket, postSse, type GrpcClients } from '../support/streams.js';

const LLM = 'qwen3';
const ENDLESS = { max_tokens: 3500, ignore_eos: true };
const servers: TestServer[] = [];
const clients: GrpcClients[] = [];
afterEach(async () => {
  clients.splice(0).forEach((c) => c.close());
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function start(args: readonly string[]): Promise<TestServer> {
  const repository = await makeRepository([{ name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) }]);
  const server = await startTestServer(repository, args);
  servers.push(server);
  return server;
}

const chat = (model: string, extra: Record<string, unknown> = {}) =>
  fetch(`http://127.0.0.1:${servers[0]!.httpPort}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, ...extra }) });

describe('unload under traffic', () => {
  it('answers 503 / UNAVAILABLE (retryable) while the model unloads, 404 only once it is gone', async () => {
    const server = await start(['--model-control-mode', 'explicit', '--load-model', LLM]);
    const rpc = grpcClients(server.grpcAddress);
    clients.push(rpc);
    const stream = await postSse(`${server.http}/v1/chat/completions`, { model: LLM, messages: [{ role: 'user', content: 'go' }], stream: true, ...ENDLESS });
    await stream.framesAtLeast(1);
    // The unload waits for the running stream, so the model stays UNLOADING until it ends.
    const unloaded = fetch(`${server.http}/v2/repository/models/${LLM}/unload`, { method: 'POST' });
    await vi.waitFor(
      async () => {
        const index = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST' })).json()) as { state: string }[];
        expect(index[0]!.state).toBe('UNLOADING');
      },
      { timeout: 30_000, interval: 20 },
    );

    const openai = await chat(LLM);
    expect(openai.status).toBe(503);
    expect(openai.headers.get('retry-after')).toBe('1');
    expect((await openai.json()).error).toMatchObject({ type: 'server_error', code: 'service_unavailable', message: expect.stringMatching(/being loaded or unloaded/) });
    const unknown = await chat('no-such-model');
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe('model_not_found');
    const kserve = await fetch(`${server.http}/v2/models/${LLM}/generate`, { method: 'POST', body: JSON.stringify({ text_input: 'hi', max_tokens: 2 }) });
    expect(kserve.status).toBe(503);
    expect(await kserve.json()).toEqual({ error: expect.any(String) });
    expect((await generateStream(rpc, { model: LLM, text: 'hi', sampling: { max_tokens: 2 } }).ended)?.code).toBe(grpc.status.UNAVAILABLE);
    const ws = await openWebSocket(server.httpPort);
    ws.send({ type: 'generate', id: 'u1', model: LLM, prompt: 'hi', max_tokens: 2 });
    expect(await ws.next((m) => m['id'] === 'u1')).toMatchObject({ type: 'error', error: { code: 'service_unavailable' } });
    ws.socket.close();

    // The running stream's client leaves; the unload completes and the model is no longer served.
    stream.disconnect();
    expect((await unloaded).status).toBe(200);
    const gone = await chat(LLM);
    expect(gone.status).toBe(404);
    expect((await gone.json()).error.code).toBe('model_not_found');
  }, 300_000);
});

describe('in-process drain', () => {
  it('a stream cut at the exit timeout gets error + [DONE] and frees its KV blocks', async () => {
    const server = await start(['--exit-timeout-secs', '0.2']);
    const model = server.manager.resolve(LLM) as LlmModel;
    const stream = await postSse(`${server.http}/v1/completions`, { model: LLM, prompt: 'Once upon a time', stream: true, ...ENDLESS });
    await stream.framesAtLeast(1);
    expect(model.engine.stats!.kvCacheUsage).toBeGreaterThan(0);
    await server.stop();
    const frames = await stream.ended;
    expect(frames.at(-1)).toBe('[DONE]');
    expect(JSON.parse(frames.at(-2)!)).toMatchObject({ error: { code: 'service_unavailable' } });
    expect(model.engine.numActive).toBe(0);
    expect(model.engine.stats!.numRunning + model.engine.stats!.numWaiting).toBe(0);
    expect(model.engine.stats!.kvCacheUsage).toBe(0);
    expect(model.failures().CANCELED).toBe(1);
    expect(server.logs).toContain('drain: exit timeout reached; 1 generation(s) still running end with an error event');
  }, 300_000);
});
