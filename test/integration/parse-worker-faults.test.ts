// Faults around the off-thread JSON parse (src/server/kit/offthread-parse.ts, issue 35), with the
// TEST-ONLY parse-worker fault (src/threads/fault-injection.ts: CONVEYOR_PARSE_WORKER_FAULT):
//
// - a parse worker that exits in the middle of a job fails that request only, as KServe's JSON
//   error with a 500; a request parsed at the same time on the other worker, and one parsed
//   inline, are answered; the next job starts a fresh worker;
// - a WebSocket frame parsed on a worker while its model unloads, and one while the model is
//   gone, get an error frame naming why; the socket stays open and serves the model once it is
//   loaded again, and nothing is left in the engine.
//
// --offthread-json-bytes is lowered so a one-image infer (~1 MB of JSON) and a small frame go
// to a worker. Every wait is for an answer, an event or a state.
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { FAULT_EXIT_CODE, FAULT_INJECTION_ENV, PARSE_WORKER_FAULT_ENV } from '../../src/threads/fault-injection.js';
import { GREEDY, LLM } from '../support/generation.js';
import { configOf, loadModel, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const OFFTHREAD_BYTES = 4096;
const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** A server parsing bodies past OFFTHREAD_BYTES on its workers; `fault` (exit_at_job:N) is read by its pool when the server starts. */
async function offThreadServer(repository: string, args: readonly string[], fault?: string): Promise<TestServer> {
  if (fault !== undefined) {
    process.env[FAULT_INJECTION_ENV] = '1';
    process.env[PARSE_WORKER_FAULT_ENV] = fault;
  }
  try {
    const server = await startTestServer(repository, ['--offthread-json-bytes', String(OFFTHREAD_BYTES), ...args]);
    servers.push(server);
    return server;
  } finally {
    delete process.env[FAULT_INJECTION_ENV];
    delete process.env[PARSE_WORKER_FAULT_ENV];
  }
}

describe('a parse worker that exits in the middle of a job', () => {
  it('fails that request alone with a 500 in KServe JSON; the others are answered and the next job starts a fresh worker', async () => {
    const server = await offThreadServer(await makeRepository([{ name: 'resnet', from: 'resnet-tiny', config: configOf('resnet-tiny', 'resnet') }]), [], 'exit_at_job:2');
    const shape = [1, 3, 224, 224];
    const values = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => (i % 251) / 251);
    const json = JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape, data: Array.from(values) }] });
    expect(json.length).toBeGreaterThan(OFFTHREAD_BYTES);
    // The same tensor as binary data: its JSON header is under the threshold, so it is parsed inline.
    const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape, parameters: { binary_data_size: values.byteLength } }] }));
    const binary = Buffer.concat([header, Buffer.from(values.buffer)]);
    const infer = (body: string | Buffer, headers: Record<string, string> = {}) =>
      fetch(`${server.http}/v2/models/resnet/infer`, { method: 'POST', body, headers }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));

    // Job 1: a worker starts and answers.
    const reference = await infer(json);
    expect(reference.status).toBe(200);
    // Jobs 2 and 3 at once, on the two workers (one is busy when the other arrives), and an inline parse beside them.
    const [first, second, inline] = await Promise.all([infer(json), infer(json), infer(binary, { 'inference-header-content-length': String(header.byteLength) })]);
    const answers = [first, second];
    const failed = answers.filter((a) => a.status !== 200);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.status).toBe(500);
    expect(failed[0]!.body).toEqual({ error: `parsing the request failed: the parse worker exited (code ${FAULT_EXIT_CODE})` });
    const answered = answers.find((a) => a.status === 200)!;
    expect(answered.body).toEqual(reference.body);
    expect(inline.status).toBe(200);
    expect(inline.body).toEqual(reference.body);

    // The pool lost that worker: the next jobs go to a fresh one (and the survivor).
    for (const next of await Promise.all([infer(json), infer(json)])) {
      expect(next.status).toBe(200);
      expect(next.body).toEqual(reference.body);
    }
  }, 120_000);
});

/** A socket that records every frame it gets; `next(id)` resolves with the id's done or error frame. */
async function recordingSocket(server: TestServer): Promise<{ socket: WebSocket; next(id: string): Promise<Record<string, unknown>> }> {
  const socket = new WebSocket(`ws://127.0.0.1:${server.httpPort}/v1/ws`);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  const ended = new Map<string, Record<string, unknown>>();
  const waiting = new Map<string, (frame: Record<string, unknown>) => void>();
  socket.on('message', (data) => {
    const frame = JSON.parse(String(data)) as Record<string, unknown>;
    if (frame['type'] !== 'done' && frame['type'] !== 'error') return;
    const id = String(frame['id']);
    ended.set(id, frame);
    waiting.get(id)?.(frame);
  });
  return {
    socket,
    next: (id) => new Promise((resolve) => (ended.has(id) ? resolve(ended.get(id)!) : waiting.set(id, resolve))),
  };
}

/** A generate frame past the threshold (a long stop string that never matches), so it is parsed on a worker. */
function largeGenerate(id: string, extra: Record<string, unknown> = {}): string {
  const frame = JSON.stringify({ type: 'generate', id, model: LLM, prompt: 'Once upon a time', stop: ['\u00a7'.repeat(OFFTHREAD_BYTES)], ...GREEDY, ...extra });
  expect(Buffer.byteLength(frame)).toBeGreaterThan(OFFTHREAD_BYTES);
  return frame;
}

describe('a WebSocket frame parsed off-thread while its model unloads', () => {
  it('gets an error frame while the model unloads and once it is gone; the socket stays usable and nothing is left in the engine', async () => {
    const server = await offThreadServer(await makeRepository([{ name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) }]), ['--model-control-mode', 'explicit', '--load-model', LLM]);
    const model = server.service.llmModel(LLM);
    // A generation on another socket keeps the unload going until it is cancelled.
    const holder = await recordingSocket(server);
    let firstDelta!: () => void;
    const started = new Promise<void>((resolve) => (firstDelta = resolve));
    holder.socket.on('message', (data) => JSON.parse(String(data)).type === 'delta' && firstDelta());
    holder.socket.send(JSON.stringify({ type: 'generate', id: 'hold', model: LLM, prompt: 'hold the unload', max_tokens: 4000, ignore_eos: true }));
    await started;

    const client = await recordingSocket(server);
    const unloaded = fetch(`${server.http}/v2/repository/models/${LLM}/unload`, { method: 'POST' });
    await vi.waitFor(() => expect(model.closing.aborted).toBe(true), { timeout: 30_000, interval: 10 });
    client.socket.send(largeGenerate('while-unloading'));
    // Unavailable (503's kind), naming the model: Triton's words for a model with no ready version.
    const unavailable = { type: 'error', error: { code: 'service_unavailable', message: `Request for unknown model: '${LLM}' has no available versions` } };
    expect(await client.next('while-unloading')).toMatchObject({ ...unavailable, id: 'while-unloading' });

    holder.socket.send(JSON.stringify({ type: 'cancel', id: 'hold' }));
    expect((await unloaded).status).toBe(200);
    client.socket.send(largeGenerate('while-gone'));
    // Unloaded, it is not served at all: Triton's words again.
    expect(await client.next('while-gone')).toMatchObject({ type: 'error', id: 'while-gone', error: { message: `Request for unknown model: '${LLM}' is not found` } });
    // The unloaded model ran nothing of those frames, and its engine is empty.
    expect(model.engine.numActive).toBe(0);

    // The same socket, the model loaded again: a large frame generates as usual.
    expect(await loadModel(server, LLM)).toEqual({ status: 200, error: '' });
    client.socket.send(largeGenerate('after-reload'));
    expect(await client.next('after-reload')).toMatchObject({ type: 'done', id: 'after-reload', finish_reason: 'length' });
    expect(client.socket.readyState).toBe(WebSocket.OPEN);
    const reloaded = server.service.llmModel(LLM);
    await vi.waitFor(
      () => {
        expect(reloaded.engine.numActive).toBe(0);
        expect(reloaded.engine.stats!.kvCacheUsage).toBe(0);
      },
      { timeout: 15_000, interval: 20 },
    );
    holder.socket.close();
    client.socket.close();
  }, 180_000);
});
