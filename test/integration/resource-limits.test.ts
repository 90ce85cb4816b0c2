// The resource limits on the real server, with real clients on loopback: a trickled body cut off
// at the request timeout, the connection cap refusing new sockets while existing ones stay
// served, depth and decompression limits answered in each route's shape, prompts refused before
// tokenizing while health stays responsive during a big allowed one, a WebSocket client that
// stops reading dropped with its generation aborted, and --max-request-secs.
import { readdirSync, readlinkSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { availableParallelism } from 'node:os';
import { Agent, request as httpRequest } from 'node:http';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { MAX_NICE, threadNice } from '../../src/threads/thread-priority.js';
import { cancelledCount, expectAbortedAndIdle, LLM, LONG } from '../support/generation.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';
import { grpcClients, unaryCall } from '../support/streams.js';
import { status as grpcStatus } from '@grpc/grpc-js';

let server: TestServer;
let capped: TestServer;
let model: LlmModel;

beforeAll(async () => {
  const repository = await makeRepository([{ name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) }]);
  server = await startTestServer(repository, [
    '--http-header-timeout-secs',
    '1',
    '--http-request-timeout-secs',
    '2',
    '--http-max-body-bytes',
    String(1 << 20),
    '--ws-send-timeout-secs',
    '1',
    '--ws-max-buffered-bytes',
    String(256 * 1024),
    '--max-prompt-chars',
    '2000000',
    '--stream-send-timeout-secs',
    '1',
    // The flood below tests flow control and the send timeout, not the invalid-message cap.
    '--ws-max-invalid-messages',
    '1000000',
  ]);
  model = server.service.llmModel(LLM);
  capped = await startTestServer(repository, ['--http-max-connections', '3', '--max-request-secs', '0.5', '--grpc-max-message-bytes', String(64 * 1024)]);
}, 180_000);
afterAll(async () => Promise.all([server?.stop(), capped?.stop()]));

const open = (port: number): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
const closed = (socket: Socket): Promise<string> =>
  new Promise((resolve) => {
    let data = '';
    socket.on('data', (chunk) => (data += String(chunk)));
    socket.on('error', () => {});
    socket.once('close', () => resolve(data));
  });

const postJson = (base: string, path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

describe('HTTP connections', () => {
  it('cuts off a client trickling its body one byte at a time at the request timeout', async () => {
    const socket = await open(server.httpPort);
    const ended = closed(socket);
    socket.write('POST /v2/models/qwen3/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n');
    let sent = 0;
    const trickle = setInterval(() => {
      if (!socket.destroyed) socket.write('[', () => sent++);
    }, 50);
    const response = await ended;
    clearInterval(trickle);
    expect(response).toMatch(/^HTTP\/1\.1 408/);
    expect(sent).toBeLessThan(100_000);
  }, 30_000);

  it('refuses connections past --http-max-connections while existing ones keep being served', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const health = () =>
      new Promise<number>((resolve, reject) => {
        httpRequest({ host: '127.0.0.1', port: capped.httpPort, path: '/v2/health/ready', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        })
          .on('error', reject)
          .end();
      });
    expect(await health()).toBe(200); // one kept-alive connection
    const idle = [await open(capped.httpPort), await open(capped.httpPort)]; // the cap (3) is reached
    expect(await health()).toBe(200);
    const refused = await open(capped.httpPort);
    expect(await closed(refused)).toBe(''); // closed without an answer: it never sent a request (the probe reserve's lifetime)
    expect(await health()).toBe(200);
    for (const socket of idle) socket.destroy();
    agent.destroy();
  }, 30_000);
});

describe('body limits', () => {
  const deep = `${'['.repeat(100_000)}1${']'.repeat(100_000)}`;

  it('answers a JSON tensor nested 100,000 deep with 400 in each route’s shape', async () => {
    const kserve = await postJson(server.http, '/v2/models/qwen3/infer', `{"inputs":[{"name":"x","datatype":"INT32","shape":[1],"data":${deep}}]}`);
    expect(kserve.status).toBe(400);
    expect(await kserve.json()).toEqual({ error: 'the JSON nests deeper than 64 levels' });
    const openai = await postJson(server.http, '/v1/chat/completions', `{"model":"qwen3","messages":[{"role":"user","content":"hi"}],"tools":${deep}}`);
    expect(openai.status).toBe(400);
    expect(await openai.json()).toMatchObject({ error: { message: 'the JSON nests deeper than 64 levels', type: 'invalid_request_error' } });
  });

  it('refuses a deflate bomb with 413 once its inflated size passes the body limit', async () => {
    const bomb = deflateSync(Buffer.alloc(64 << 20)); // 64 MiB of zeros in ~64 KiB
    const response = await fetch(`${server.http}/v2/models/qwen3/infer`, { method: 'POST', body: bomb, headers: { 'content-encoding': 'deflate' } });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ error: `the decompressed request body is larger than the ${1 << 20}-byte limit` });
  });
});

describe('prompts', () => {
  it('refuses a prompt over --max-prompt-chars on /tokenize and completions with 400 before tokenizing', async () => {
    const text = 'x '.repeat(1_000_001);
    for (const [path, body] of [
      ['/tokenize', { model: LLM, prompt: text }],
      ['/v1/completions', { model: LLM, prompt: text, max_tokens: 1 }],
    ] as const) {
      const response = await postJson(server.http, path, JSON.stringify(body));
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: 'context_length_exceeded', message: expect.stringContaining('2000002 characters, more than the 2000000') } });
    }
  });

  it('keeps health answering while a big allowed prompt is tokenized', async () => {
    const text = Array.from({ length: 50_000 }, (_, i) => `w${i % 5000}`).join(' '); // ~290K characters
    const started = performance.now();
    const tokenized = postJson(server.http, '/tokenize', JSON.stringify({ model: LLM, prompt: text })).then(async (r) => ({ status: r.status, body: (await r.json()) as { count: number } }));
    let done = false;
    void tokenized.finally(() => (done = true));
    const latencies: number[] = [];
    while (!done) {
      const t = performance.now();
      expect((await fetch(`${server.http}/v2/health/live`)).status).toBe(200);
      latencies.push(performance.now() - t);
    }
    const { status, body } = await tokenized;
    const tokenizeMs = performance.now() - started;
    expect(status).toBe(200);
    expect(body.count).toBeGreaterThan(50_000);
    const worst = Math.max(...latencies);
    console.log(`tokenize ${text.length} chars: ${tokenizeMs.toFixed(0)} ms; ${latencies.length} health probes meanwhile, worst ${worst.toFixed(1)} ms`);
    // Tokenized in place, one probe would have waited the whole tokenization.
    expect(latencies.length).toBeGreaterThan(3);
    expect(worst).toBeLessThan(tokenizeMs / 2);
  }, 120_000);
});

describe('a WebSocket client that stops reading', () => {
  it('is dropped, its generation aborted and its blocks freed, while the server stays healthy', async () => {
    const cancelledBefore = cancelledCount(model);
    const socket = new WebSocket(`ws://127.0.0.1:${server.httpPort}/v1/ws`);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    socket.on('error', () => {});
    socket.send(JSON.stringify({ type: 'generate', id: 'g', model: LLM, prompt: 'tell me a story', ...LONG }));
    await vi.waitFor(() => expect(model.engine.stats!.numRunning).toBe(1), { timeout: 30_000, interval: 20 });
    // Stop reading, and flood bad frames whose error replies would pile up without flow control.
    (socket as unknown as { _socket: Socket })._socket.pause();
    for (let i = 0; i < 50_000; i++) socket.send('{}');
    await expectAbortedAndIdle(model, cancelledBefore);
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(200);
    socket.terminate();
  }, 60_000);
});

describe('an SSE client that stops reading', () => {
  it('is dropped after --stream-send-timeout-secs, its generations aborted and their blocks freed', async () => {
    // 16 choices with 20 top logprobs a token: tens of MB if it ran to the end, far more than the
    // kernel's socket buffers hold, so the server really has to hold output for this client.
    const body = JSON.stringify({ model: LLM, messages: [{ role: 'user', content: 'never read' }], stream: true, n: 16, logprobs: true, top_logprobs: 20, max_tokens: 3000, ignore_eos: true });
    const reasons: string[] = [];
    model.engine.onStep((step) => reasons.push(...step.updates.flatMap((u) => (u.finishReason ? [u.finishReason] : []))));
    const dropped = new Promise<void>((resolve, reject) => {
      const request = httpRequest(`${server.http}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (response) => {
        expect(response.statusCode).toBe(200);
        response.pause();
        // A paused reader notices the drop only once it reads again.
        vi.waitFor(() => expect(model.engine.numActive).toBe(0), { timeout: 90_000, interval: 50 }).then(() => {
          response
            .on('error', () => resolve())
            .on('close', () => resolve())
            .resume();
        }, reject);
      });
      request.on('error', () => resolve());
      request.end(body);
    });
    await vi.waitFor(() => expect(model.engine.numActive).toBe(16), { timeout: 30_000, interval: 20 });
    await dropped;
    // Dropped while generating: every choice ended by an abort, none ran to its length.
    expect(reasons).toEqual(Array(16).fill('abort'));
    await vi.waitFor(() => expect(model.engine.stats!.kvCacheUsage).toBe(0), { timeout: 15_000, interval: 20 });
    expect(model.engine.stats!.numRunning + model.engine.stats!.numWaiting).toBe(0);
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(200);
  }, 150_000);
});

describe('--grpc-max-message-bytes', () => {
  it('runs the engine thread and its ONNX Runtime threads --compute-thread-nice below the serving thread', () => {
    const threadId = (link: string): number => Number(link.split('/').pop());
    const serving = threadNice(threadId(readlinkSync('/proc/thread-self')));
    const nices = readdirSync('/proc/self/task').map((tid) => threadNice(Number(tid)));
    const expected = Math.min(MAX_NICE, serving + DEFAULT_LIMITS.computeThreadNice);
    // The engine thread, and ORT's intra-op thread it started where the model runs on more than one.
    expect(nices.filter((nice) => nice === expected).length).toBeGreaterThanOrEqual(availableParallelism() > 1 ? 2 : 1);
    expect(server.logs.some((line) => line.includes(`compute threads at nice ${expected}`))).toBe(true);
  });

  it('refuses a larger gRPC message with RESOURCE_EXHAUSTED and keeps serving smaller ones', async () => {
    const clients = grpcClients(capped.grpcAddress);
    try {
      const big = await unaryCall(clients.inference, 'ModelMetadata', { name: 'x'.repeat(100 * 1024) });
      expect(big.error?.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
      const live = await unaryCall(clients.inference, 'ServerLive', {});
      expect(live.reply).toMatchObject({ live: true });
    } finally {
      clients.close();
    }
  }, 60_000);
});

describe('--max-request-secs', () => {
  it('aborts a generation past the limit, freeing its blocks even while its consumer is not reading', async () => {
    const slow = capped.service.llmModel(LLM);
    const generation = slow.generate(await slow.prepare({ prompt: { kind: 'text', text: 'hello' }, sampling: { max_tokens: 4000, ignore_eos: true } }));
    await generation.next();
    await vi.waitFor(() => expect(slow.engine.stats!.numRunning + slow.engine.stats!.numWaiting).toBe(0), { timeout: 30_000, interval: 20 });
    expect(slow.engine.stats!.kvCacheUsage).toBe(0);
    const drain = async () => {
      for await (const _ of { [Symbol.asyncIterator]: () => generation });
    };
    await expect(drain()).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', message: expect.stringContaining('0.5-second limit') });
  }, 60_000);
});
