// Clients that stop reading cannot hold the server (issue 35): while a model unloads or the server
// drains, a WebSocket or SSE client that reads nothing is disconnected after
// --undelivered-output-timeout-secs, whatever the send timeouts say, and the unload / drain goes
// on; generations already finished in the engine (their blocks freed) are not waited for. Every
// wait is for an event or a state, never a fixed time.
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { killCliServer, startCliServer, type CliServer } from '../support/cli-server.js';
import { LLM } from '../support/generation.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const BOUND_SECS = 1;
// What a loaded 2-core machine may add to the bound; the send timeouts (600 s) are far above it.
const SLACK_MS = 10_000;
const LONG_SEND_TIMEOUTS = ['--ws-send-timeout-secs', '600', '--stream-send-timeout-secs', '600', '--ws-max-generations', '64'];
const GENERATIONS = 64;
// ≈ 1 KB a token with 20 top logprobs: 64 × 100 tokens is several MB, more than loopback's socket
// buffers take from a client that never reads, less than --ws-max-buffered-bytes (16 MiB).
const HEAVY = { logprobs: true, top_logprobs: 20, max_tokens: 100, ignore_eos: true };

const servers: TestServer[] = [];
const cliServers: CliServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  await Promise.all(cliServers.splice(0).map(killCliServer));
});

async function repository(): Promise<string> {
  return makeRepository([{ name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) }]);
}

async function explicitServer(): Promise<TestServer> {
  const server = await startTestServer(await repository(), ['--model-control-mode', 'explicit', '--load-model', LLM, '--undelivered-output-timeout-secs', String(BOUND_SECS), ...LONG_SEND_TIMEOUTS]);
  servers.push(server);
  return server;
}

/** A WebSocket client that sends `GENERATIONS` heavy generations and never reads their output. */
async function neverReadingWebSocket(httpPort: number): Promise<{ socket: WebSocket; closed: Promise<number>; resume(): void }> {
  const socket = new WebSocket(`ws://127.0.0.1:${httpPort}/v1/ws`);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  socket.pause();
  for (let i = 0; i < GENERATIONS; i++) socket.send(JSON.stringify({ type: 'generate', id: `g${i}`, model: LLM, prompt: `story ${i}`, ...HEAVY }));
  return { socket, closed, resume: () => socket.resume() };
}

/** Resolves once the engine has finished every generation it was given, the client having read none of it. */
async function engineFinished(model: LlmModel, count: number): Promise<void> {
  let finished = 0;
  model.engine.onStep((step) => (finished += step.updates.filter((u) => u.finishReason !== null).length));
  await vi.waitFor(() => expect(finished).toBe(count), { timeout: 240_000, interval: 50 });
  await vi.waitFor(() => expect(model.engine.stats!.numRunning + model.engine.stats!.numWaiting).toBe(0), { timeout: 30_000, interval: 20 });
  // Output still waits on the main thread for its client: the engine's streams are not all consumed.
  expect(model.engine.numActive).toBeGreaterThan(0);
}

describe('unload with a WebSocket client that never reads', () => {
  it('does not hold the unload: within the bound its finished generations are let go, the unload completes and the socket is closed', async () => {
    const server = await explicitServer();
    const model = server.service.llmModel(LLM);
    const client = await neverReadingWebSocket(server.httpPort);
    await engineFinished(model, GENERATIONS);
    // Finished in the engine, their blocks are free; only the delivery is left.
    await vi.waitFor(() => expect(model.engine.stats!.kvCacheUsage).toBe(0), { timeout: 30_000, interval: 20 });

    const started = performance.now();
    const unload = await fetch(`${server.http}/v2/repository/models/${LLM}/unload`, { method: 'POST' });
    const unloadMs = performance.now() - started;
    expect(unload.status).toBe(200);
    expect(unloadMs).toBeGreaterThanOrEqual(BOUND_SECS * 1000 * 0.9);
    expect(unloadMs).toBeLessThan(BOUND_SECS * 1000 + SLACK_MS);
    expect((await fetch(`${server.http}/v2/repository/index`, { method: 'POST' }).then((r) => r.json())) as unknown).toEqual([{ name: LLM, version: '', state: 'UNAVAILABLE', reason: 'unloaded' }]);

    // Reading again, the client finds its socket closed (1001 when the close frame got through, else cut).
    client.resume();
    expect([1001, 1006]).toContain(await client.closed);
  }, 300_000);
});

describe('an SSE client that stops reading', () => {
  it('is disconnected within the bound once its model unloads, its generations aborted, and the unload completes', async () => {
    const server = await explicitServer();
    const model = server.service.llmModel(LLM);
    // 16 choices with 20 top logprobs a token: tens of MB if it ran to the end, far more than the
    // kernel's socket buffers take, so the server really holds output for this client.
    const body = JSON.stringify({ model: LLM, messages: [{ role: 'user', content: 'never read' }], stream: true, n: 16, logprobs: true, top_logprobs: 20, max_tokens: 3000, ignore_eos: true });
    let resumeReading = (): void => {};
    const ended = new Promise<void>((resolve) => {
      const request = httpRequest(`${server.http}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (response) => {
        expect(response.statusCode).toBe(200);
        response.on('error', () => resolve()).on('close', () => resolve());
        response.pause();
        resumeReading = () => response.resume();
      });
      request.on('error', () => resolve());
      request.end(body);
    });
    await vi.waitFor(() => expect(model.engine.numActive).toBe(16), { timeout: 60_000, interval: 20 });

    const started = performance.now();
    const unload = await fetch(`${server.http}/v2/repository/models/${LLM}/unload`, { method: 'POST' });
    expect(unload.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(BOUND_SECS * 1000 + SLACK_MS);
    // Ended by the drop (each aborted in the engine, its blocks freed), not run to their 3000 tokens.
    expect(server.logs.filter((line) => line === 'generation finished (abort)')).toHaveLength(16);
    resumeReading();
    await ended;
  }, 300_000);
});

describe('SIGTERM with a WebSocket client that never reads', () => {
  it('exits within the bound, not --exit-timeout-secs', async () => {
    const server = await startCliServer(await repository(), ['--exit-timeout-secs', '600', '--undelivered-output-timeout-secs', String(BOUND_SECS), ...LONG_SEND_TIMEOUTS]);
    cliServers.push(server);
    const client = await neverReadingWebSocket(server.httpPort);
    // The engine's own count, per step: every token of every generation made (the client has read none).
    await vi.waitFor(
      async () => {
        const metrics = await (await fetch(`${server.http}/metrics`)).text();
        const generated = /^conveyor:generation_tokens_total\{[^}]*\} (\d+)/m.exec(metrics);
        expect(Number(generated?.[1] ?? 0)).toBe(GENERATIONS * HEAVY.max_tokens);
      },
      { timeout: 240_000, interval: 200 },
    );

    const started = performance.now();
    server.signal('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(performance.now() - started).toBeLessThan(BOUND_SECS * 1000 + SLACK_MS);
    expect(server.lines.find((l) => l.msg === 'drain: stopped')).toMatchObject({ finishedInTime: true });
    client.resume();
    await client.closed;
  }, 300_000);
});
