// SIGTERM and SIGINT against the real CLI in a child process: the drain keeps the listeners open
// with readiness false and refuses new work as retryable in every protocol, lets running streams
// finish and exits 0; at a short exit timeout, running streams end with a final error in their
// protocol's shape; a second signal exits at once. Every wait is for a log line or an event.
import { afterEach, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { startCliServer, killCliServer, type CliServer } from '../support/cli-server.js';
import { configOf, makeRepository } from '../support/server.js';
import { generateStream, grpcClients, openWebSocket, postSse, unaryCall, type GrpcClients } from '../support/streams.js';

const LLM = 'qwen3';
const servers: CliServer[] = [];
const clients: GrpcClients[] = [];
afterEach(async () => {
  clients.splice(0).forEach((c) => c.close());
  await Promise.all(servers.splice(0).map(killCliServer));
});

async function start(args: readonly string[]): Promise<CliServer> {
  const repository = await makeRepository([{ name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) }]);
  const server = await startCliServer(repository, args);
  servers.push(server);
  return server;
}

function connect(server: CliServer): GrpcClients {
  const c = grpcClients(server.grpcAddress);
  clients.push(c);
  return c;
}

const chat = (extra: Record<string, unknown>) => ({ model: LLM, messages: [{ role: 'user', content: 'Keep going' }], ...extra });
// Hundreds of engine steps: far longer than the checks made while it runs, far shorter than the drain allows.
const LONGER_THAN_CHECKS = { max_tokens: 600, ignore_eos: true };
// Thousands of steps: only the exit timeout ends it.
const ENDLESS = { max_tokens: 3500, ignore_eos: true };
const parsed = (frames: string[]) => frames.filter((f) => f !== '[DONE]').map((f) => JSON.parse(f) as Record<string, unknown>);

describe('SIGTERM drain', () => {
  it('keeps the listeners open with readiness false, refuses new requests as retryable, lets the running stream finish, exits 0', async () => {
    const server = await start(['--exit-timeout-secs', '600']);
    const grpcClient = connect(server);
    expect((await unaryCall(grpcClient.inference, 'ServerReady', {})).reply).toEqual({ ready: true });
    const stream = await postSse(`${server.http}/v1/chat/completions`, chat({ stream: true, ...LONGER_THAN_CHECKS }));
    await stream.framesAtLeast(1);

    server.signal('SIGTERM');
    await server.waitForLog(/^draining/);
    // Readiness false at once (Triton / KServe answer "not ready" with 400), liveness still true.
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(400);
    expect((await fetch(`${server.http}/v2/health/live`)).status).toBe(200);
    expect((await unaryCall(grpcClient.inference, 'ServerReady', {})).reply).toEqual({ ready: false });
    expect((await unaryCall(grpcClient.inference, 'ServerLive', {})).reply).toEqual({ live: true });
    expect((await unaryCall(grpcClient.health, 'Check', { service: '' })).reply).toEqual({ status: 'NOT_SERVING' });

    // New requests reach the open listener and are refused in each protocol's retryable shape.
    const openai = await fetch(`${server.http}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(chat({ max_tokens: 2 })) });
    expect(openai.status).toBe(503);
    expect(openai.headers.get('retry-after')).toBe('1');
    expect((await openai.json()).error).toMatchObject({ type: 'server_error', code: 'service_unavailable', param: null, message: expect.stringMatching(/shutting down/) });
    const kserve = await fetch(`${server.http}/v2/models/${LLM}/generate`, { method: 'POST', body: JSON.stringify({ text_input: 'hi', max_tokens: 2 }) });
    expect(kserve.status).toBe(503);
    expect(await kserve.json()).toEqual({ error: expect.stringMatching(/shutting down/) });
    const refused = generateStream(grpcClient, { model: LLM, text: 'hi', sampling: { max_tokens: 2 } });
    expect((await refused.ended)?.code).toBe(grpc.status.UNAVAILABLE);
    const ws = await openWebSocket(server.httpPort);
    ws.send({ type: 'generate', id: 'late', model: LLM, prompt: 'hi', max_tokens: 2 });
    expect(await ws.next((m) => m['id'] === 'late')).toMatchObject({ type: 'error', error: { code: 'service_unavailable' } });
    ws.socket.close();

    // The stream that was running finishes in full, then the server exits cleanly.
    const frames = await stream.ended;
    expect(frames.at(-1)).toBe('[DONE]');
    const chunks = parsed(frames);
    expect(chunks.some((c) => 'error' in c)).toBe(false);
    expect(chunks.at(-1)).toMatchObject({ choices: [{ finish_reason: 'length' }] });
    expect(await server.exited).toBe(0);
    expect(server.lines.map((l) => l.msg)).toContain('drain: every in-flight request finished');
  }, 600_000);

  it('exits at once when nothing is running', async () => {
    const server = await start(['--exit-timeout-secs', '600']);
    server.signal('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.lines.find((l) => l.msg === 'drain: stopped')).toMatchObject({ finishedInTime: true, aborted: 0 });
  }, 300_000);

  it('at the exit timeout ends SSE, WebSocket and gRPC streams with a final error, then exits 0', async () => {
    const server = await start(['--exit-timeout-secs', '0.5']);
    const grpcClient = connect(server);
    const sse = await postSse(`${server.http}/v1/chat/completions`, chat({ stream: true, ...ENDLESS }));
    const ws = await openWebSocket(server.httpPort);
    ws.send({ type: 'generate', id: 'w1', model: LLM, prompt: 'Once upon a time', ...ENDLESS });
    const rpc = generateStream(grpcClient, { model: LLM, request_id: 'g1', text: 'Once upon a time', sampling: ENDLESS });
    await Promise.all([sse.framesAtLeast(1), ws.next((m) => m['type'] === 'delta'), rpc.first]);

    server.signal('SIGTERM');
    const frames = await sse.ended;
    expect(frames.at(-1)).toBe('[DONE]');
    const last = parsed(frames).at(-1)!;
    expect(last).toEqual({ error: { message: expect.stringMatching(/exit timeout/), type: 'server_error', param: null, code: 'service_unavailable' } });
    expect(await ws.next((m) => m['id'] === 'w1' && m['type'] !== 'delta')).toMatchObject({ type: 'error', error: { code: 'service_unavailable', message: expect.stringMatching(/exit timeout/) } });
    expect(ws.messages.some((m) => m['type'] === 'done')).toBe(false);
    const status = await rpc.ended;
    expect(status?.code).toBe(grpc.status.UNAVAILABLE);
    expect(status?.details).toMatch(/exit timeout/);
    await ws.closed;
    expect(await server.exited).toBe(0);
    expect(server.lines.find((l) => l.msg.startsWith('drain: exit timeout reached'))).toMatchObject({ aborted: 3 });
    // The engine itself ended all three (their blocks are freed at that step).
    expect(server.lines.filter((l) => l.msg === 'generation finished (abort)')).toHaveLength(3);
  }, 600_000);

  it('a second SIGTERM during the drain exits at once with 143', async () => {
    const server = await start(['--exit-timeout-secs', '600']);
    const stream = await postSse(`${server.http}/v1/chat/completions`, chat({ stream: true, ...ENDLESS }));
    await stream.framesAtLeast(1);
    server.signal('SIGTERM');
    await server.waitForLog(/^draining/);
    server.signal('SIGTERM');
    expect(await server.exited).toBe(143);
    expect(server.lines.map((l) => l.msg)).toContain('SIGTERM again during the drain: exiting now, in-flight requests are cut');
  }, 300_000);

  it('SIGINT drains the same way, and a second SIGINT exits with 130', async () => {
    const server = await start(['--exit-timeout-secs', '600']);
    const stream = await postSse(`${server.http}/v1/chat/completions`, chat({ stream: true, ...ENDLESS }));
    await stream.framesAtLeast(1);
    server.signal('SIGINT');
    await server.waitForLog(/^draining/);
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(400);
    server.signal('SIGINT');
    expect(await server.exited).toBe(130);
  }, 300_000);
});
