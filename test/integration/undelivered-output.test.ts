// Clients that stop reading cannot hold the server (issue 35): while a model unloads or the server
// drains, a WebSocket or SSE client that reads nothing is disconnected after
// --undelivered-output-timeout-secs, whatever the send timeouts say, and the unload / drain goes
// on; generations already finished in the engine (their blocks freed) are not waited for. Every
// wait is for an event or a state, never a fixed time.
import { request as httpRequest } from 'node:http';
import { describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { LLM } from '../support/generation.js';
import { BOUND_SECS, expectDrainWithinBound, generatedTokens, SLACK_MS, timedUnload, undeliveredOutputServers } from '../support/undelivered-output.js';

const GENERATIONS = 64;
// ≈ 1 KB a token with 20 top logprobs: 64 × 100 tokens is several MB, more than loopback's socket
// buffers take from a client that never reads, less than --ws-max-buffered-bytes (16 MiB).
const HEAVY = { logprobs: true, top_logprobs: 20, max_tokens: 100, ignore_eos: true };

const { explicitServer, cliServer } = undeliveredOutputServers(['--ws-max-generations', String(GENERATIONS)]);

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
    const { server, model } = await explicitServer();
    const client = await neverReadingWebSocket(server.httpPort);
    await engineFinished(model, GENERATIONS);
    // Finished in the engine, their blocks are free; only the delivery is left.
    await vi.waitFor(() => expect(model.engine.stats!.kvCacheUsage).toBe(0), { timeout: 30_000, interval: 20 });

    const unloadMs = await timedUnload(server);
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
    const { server, model } = await explicitServer();
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
    // Behind for certain before the unload starts: 300 tokens a choice is ~12 MB of SSE (20 top
    // logprobs each), past any socket buffer. Timed from there, the unload measures the bound, not
    // how long a loaded machine takes to fill the buffers.
    await vi.waitFor(async () => expect(await generatedTokens(server.http)).toBeGreaterThanOrEqual(16 * 300), { timeout: 240_000, interval: 100 });

    expect(await timedUnload(server)).toBeLessThan(BOUND_SECS * 1000 + SLACK_MS);
    // Ended by the drop (each aborted in the engine, its blocks freed), not run to their 3000 tokens.
    expect(server.logs.filter((line) => line === 'generation finished (abort)')).toHaveLength(16);
    resumeReading();
    await ended;
  }, 300_000);
});

describe('SIGTERM with a WebSocket client that never reads', () => {
  it('exits within the bound, not --exit-timeout-secs', async () => {
    const server = await cliServer();
    const client = await neverReadingWebSocket(server.httpPort);
    // The engine's own count, per step: every token of every generation made (the client has read none).
    await vi.waitFor(async () => expect(await generatedTokens(server.http)).toBe(GENERATIONS * HEAVY.max_tokens), { timeout: 240_000, interval: 200 });

    await expectDrainWithinBound(server);
    client.resume();
    await client.closed;
  }, 300_000);
});
