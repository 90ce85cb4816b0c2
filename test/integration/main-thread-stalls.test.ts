// One request cannot stall everyone (issue 35): a 19 MB KServe JSON infer, 10 MB WebSocket frames
// (a good one and a bad one) and 32 × 1 MB stop strings are parsed off the serving thread, so a
// health probe sent every few milliseconds meanwhile is answered promptly and the event loop (this
// process runs the server) never lags long. Each answer is the one the inline path gives: the
// binary-tensor infer, the engine's own greedy output, the inline parser's error frame.
//
// The bound is STALL_BOUND_MS, not the 100 ms: on the shared 2-core test machine (load
// average 9) the parse-worker path measured 14–180 ms worst probe, the inline path
// (CONVEYOR_INLINE_PARSE=1) 140–705 ms; the soak measures the 100 ms goal.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { errorMessage } from '../../src/server/websocket/messages.js';
import { readFrame } from '../../src/server/websocket/offthread-frame.js';
import { engineOutput, GREEDY, LLM } from '../support/generation.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const MiB = 1024 * 1024;
const STALL_BOUND_MS = 250;
let server: TestServer;
let model: LlmModel;

beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'resnet', from: 'resnet-tiny', config: configOf('resnet-tiny', 'resnet') },
    { name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) },
  ]);
  // CONVEYOR_INLINE_PARSE=1 measures the inline path (what the server did before the parse worker).
  const inline = process.env.CONVEYOR_INLINE_PARSE === '1' ? ['--offthread-json-bytes', '0'] : [];
  server = await startTestServer(repository, ['--ws-max-message-bytes', String(64 * MiB), ...inline]);
  model = server.manager.resolve(LLM) as LlmModel;
}, 120_000);
afterAll(async () => server?.stop());

interface Stalls {
  readonly probes: number;
  /** Slowest /v2/health/live answer while the work ran, ms. */
  readonly probeMaxMs: number;
  /** Worst event-loop delay while the work ran, ms. */
  readonly lagMaxMs: number;
}

/** Runs `work` while probing liveness every 5 ms and watching this process's event loop. */
async function underProbes<T>(work: () => Promise<T>): Promise<{ result: T; stalls: Stalls }> {
  const latencies: number[] = [];
  const inFlight = new Set<Promise<void>>();
  const probe = (): void => {
    const sent = performance.now();
    const done = fetch(`${server.http}/v2/health/live`)
      .then(async (response) => {
        await response.arrayBuffer();
        latencies.push(performance.now() - sent);
      })
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  };
  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const timer = setInterval(probe, 5);
  try {
    const result = await work();
    return { result, stalls: { probes: latencies.length, probeMaxMs: Math.max(...latencies), lagMaxMs: lag.max / 1e6 } };
  } finally {
    clearInterval(timer);
    lag.disable();
    await Promise.all(inFlight);
  }
}

function expectNoStall(stalls: Stalls): void {
  console.log(`probes ${stalls.probes}, probe max ${stalls.probeMaxMs.toFixed(1)} ms, event-loop lag max ${stalls.lagMaxMs.toFixed(1)} ms`);
  expect(stalls.probes).toBeGreaterThan(5);
  expect(stalls.probeMaxMs).toBeLessThan(STALL_BOUND_MS);
  expect(stalls.lagMaxMs).toBeLessThan(STALL_BOUND_MS);
}

describe('a large request does not stall the serving thread', () => {
  it('parses a 19 MB KServe JSON infer off-thread, with the answer of the binary path', async () => {
    const shape = [32, 3, 224, 224];
    const values = Float32Array.from({ length: 32 * 3 * 224 * 224 }, (_, i) => (i * 7) % 1009);
    // Encoded before the probes start: the client shares the server's thread here.
    const json = Buffer.from(JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape, data: Array.from(values) }] }));
    expect(json.byteLength).toBeGreaterThan(18e6);
    const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape, parameters: { binary_data_size: values.byteLength } }] }));
    const binary = Buffer.concat([header, Buffer.from(values.buffer)]);
    const infer = (body: string | Buffer, headers: Record<string, string> = {}) =>
      fetch(`${server.http}/v2/models/resnet/infer`, { method: 'POST', body, headers }).then(async (r) => ({ status: r.status, body: (await r.json()) as { outputs: { data: number[] }[] } }));

    const reference = await infer(binary, { 'inference-header-content-length': String(header.byteLength) });
    expect(reference.status).toBe(200);
    const { result, stalls } = await underProbes(() => infer(json));
    expect(result.status).toBe(200);
    expect(result.body.outputs[0]!.data).toEqual(reference.body.outputs[0]!.data);
    expectNoStall(stalls);

    // A bad large body answers as a bad small one does: 400 with the parser's message.
    const bad = await underProbes(() => infer(json.subarray(0, -2)));
    expect(bad.result.status).toBe(400);
    expect(JSON.stringify(bad.result.body)).toContain('failed to parse the request JSON');
    expectNoStall(bad.stalls);
  }, 120_000);

  /**
   * Sends one frame on a fresh socket and collects its frames until `done` or `error`. The client
   * masks with zeros, which ws skips on both ends: without the optional native bufferutil, ws
   * (un)masks in JavaScript, ~6 ms a MB on this machine, and here the client shares the server's
   * thread. What this test holds is the parsing, which is ours.
   */
  async function exchange(frame: Buffer): Promise<Record<string, unknown>[]> {
    const socket = new WebSocket(`ws://127.0.0.1:${server.httpPort}/v1/ws`, { generateMask: (mask) => mask.fill(0) });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const frames: Record<string, unknown>[] = [];
    const finished = new Promise<void>((resolve) =>
      socket.on('message', (data) => {
        const message = JSON.parse(String(data)) as Record<string, unknown>;
        frames.push(message);
        if (message.type === 'done' || message.type === 'error') resolve();
      }),
    );
    socket.send(frame, { binary: false });
    await finished;
    socket.close();
    return frames;
  }

  const textOf = (frames: Record<string, unknown>[]) =>
    frames
      .filter((f) => f.type === 'delta')
      .map((f) => f.text)
      .join('');

  it('reads a 10 MB WebSocket frame and 32 × 1 MB stop strings off-thread, with the engine’s own output', async () => {
    const prompt = 'The quick brown fox';
    const expected = await engineOutput(model, { prompt: { kind: 'text', text: prompt }, sampling: GREEDY });
    // Stop strings the output never contains: the generation runs to max_tokens as without them.
    const stops = (count: number, bytes: number) => Array.from({ length: count }, (_, i) => `${String(i).padStart(4, '~')}${'\u00a7'.repeat(bytes / 2 - 4)}`);
    for (const [count, bytes] of [
      [10, MiB],
      [32, MiB],
    ] as const) {
      const frame = Buffer.from(JSON.stringify({ type: 'generate', id: 'big', model: LLM, prompt, ...GREEDY, stop: stops(count, bytes) }));
      expect(frame.byteLength).toBeGreaterThan(count * MiB * 0.99);
      const { result, stalls } = await underProbes(() => exchange(frame));
      expect(textOf(result)).toBe(expected.text);
      expect(result.at(-1)).toMatchObject({ type: 'done', id: 'big', finish_reason: 'length' });
      expectNoStall(stalls);
    }
  }, 120_000);

  it('answers a bad 10 MB WebSocket frame with the inline parser’s error frame', async () => {
    const frame = Buffer.from(JSON.stringify({ type: 'generate', id: 'bad', model: LLM, prompt: 'x'.repeat(10 * MiB) }).slice(0, -1));
    const { result, stalls } = await underProbes(() => exchange(frame));
    expectNoStall(stalls);
    const inline = readFrame(frame, 64);
    expect('error' in inline).toBe(true);
    expect(result).toEqual([errorMessage('error' in inline ? inline.error : undefined, 'error' in inline ? inline.id : undefined)]);
  }, 60_000);

  /** A client text frame masked with zeros (the payload stays as it is), as ws would write it. */
  function maskedTextFrame(text: string): Buffer {
    const payload = Buffer.from(text);
    if (payload.byteLength >= 65_536) throw new Error('frame too long for this helper');
    const head = payload.byteLength < 126 ? Buffer.from([0x81, 0x80 | payload.byteLength]) : Buffer.from([0x81, 0x80 | 126, payload.byteLength >> 8, payload.byteLength & 0xff]);
    return Buffer.concat([head, Buffer.alloc(4), payload]);
  }

  it('answers 20,000 frames written at once one per turn, so probes are served meanwhile', async () => {
    const flood = 20_000;
    // The client reads one frame per turn too: it shares this thread with the server.
    const socket = new WebSocket(`ws://127.0.0.1:${server.httpPort}/v1/ws`, { allowSynchronousEvents: false });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    let refused = 0;
    const allRefused = new Promise<void>((resolve) =>
      socket.on('message', (data) => {
        const message = JSON.parse(String(data)) as { type: string; error?: { message?: string } };
        if (message.type === 'error' && /at most \d+ generations/.test(message.error?.message ?? '')) refused++;
        if (refused === flood) resolve();
      }),
    );
    // 16 long generations fill the socket's seats; every frame after them is refused with an error frame.
    const seats = Array.from({ length: 16 }, (_, i) => JSON.stringify({ type: 'generate', id: `seat-${i}`, model: LLM, prompt: 'hi', max_tokens: 4000, ignore_eos: true }));
    const refusedFrames = Array.from({ length: flood }, (_, i) => JSON.stringify({ type: 'generate', id: `extra-${i}`, model: LLM, prompt: 'hi', max_tokens: 4 }));
    const bytes = Buffer.concat([...seats, ...refusedFrames].map(maskedTextFrame));
    // One write of every frame (≈ 2 MB): the server reads them as fast as the socket delivers.
    const raw = (socket as unknown as { _socket: { write(b: Buffer): void } })._socket;
    const { stalls } = await underProbes(async () => {
      raw.write(bytes);
      await allRefused;
    });
    socket.terminate();
    expect(refused).toBe(flood);
    expectNoStall(stalls);
  }, 120_000);
});
