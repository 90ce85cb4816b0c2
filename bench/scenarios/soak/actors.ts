// The clients of a soak, each an async loop that runs until the soak's deadline and records every
// outcome: streaming chats, completions ended by stop strings (the old engine killer), embeddings,
// CNN inference, malformed and hostile requests, clients that hang up mid-stream, a WebSocket
// client that stops reading, and a live precision swap of the LLM.

import WebSocket from 'ws';
import { checkHttpResponse, type HttpBinaryRequest, type ModelMetadata } from '../infer/payloads.js';
import { BAD_REQUESTS, type BadRequest } from './bad-requests.js';
import type { ActorKind, Tally } from './tally.js';

export interface SoakTarget {
  readonly http: string;
  readonly llm: string;
  readonly encoder: string;
  readonly cnn: string;
  readonly cnnMetadata: ModelMetadata;
  readonly cnnRequest: HttpBinaryRequest;
  /** How long one request may take before it counts as hung. */
  readonly requestTimeoutMs: number;
}

export interface ActorContext {
  readonly target: SoakTarget;
  readonly tally: Tally;
  /** True while the soak runs; every loop checks it between requests. */
  readonly running: () => boolean;
  /** Resolves when the soak ends or after `ms`, whichever is first (pauses between chaos rounds). */
  readonly pause: (ms: number) => Promise<void>;
  /** Deterministic pseudo-random integer below n. */
  readonly random: (n: number) => number;
}

export interface Actor {
  readonly name: string;
  readonly kind: ActorKind;
  run(context: ActorContext): Promise<void>;
}

const json = { 'content-type': 'application/json' };
const describeError = (error: unknown): string => (error instanceof Error ? (error.name === 'TimeoutError' ? 'timed out' : `${error.name}: ${error.message}`) : String(error));

/** Repeats `once` until the soak ends, recording each outcome; a throw is recorded as a failure. */
function loop(name: string, kind: ActorKind, once: (context: ActorContext) => Promise<{ label: string; ok: boolean }>): Actor {
  return {
    name,
    kind,
    async run(context) {
      while (context.running()) {
        const { label, ok } = await once(context).catch((error: unknown) => ({ label: describeError(error), ok: false }));
        context.tally.record(name, kind, label, ok);
      }
    },
  };
}

/** Reads an SSE body to its end; ok when it ends with [DONE] after content and no error event. */
async function readStream(response: Response): Promise<{ label: string; ok: boolean }> {
  if (response.status !== 200) return { label: `HTTP ${response.status}`, ok: false };
  const text = await response.text();
  if (/^data: \{"error"/m.test(text)) return { label: 'error event in the stream', ok: false };
  if (!text.endsWith('data: [DONE]\n\n')) return { label: 'stream ended without [DONE]', ok: false };
  return { label: 'ok', ok: true };
}

export const streamingChat = (index: number): Actor =>
  loop(`streaming chat ${index}`, 'good', async ({ target, random }) => {
    const body = {
      model: target.llm,
      messages: [{ role: 'user', content: `Soak ${index}: tell me about ${random(1000)}` }],
      max_tokens: 8 + random(40),
      temperature: 0.7,
      seed: random(1 << 30),
      stream: true,
    };
    const response = await fetch(`${target.http}/v1/chat/completions`, { method: 'POST', headers: json, body: JSON.stringify(body), signal: AbortSignal.timeout(target.requestTimeoutMs) });
    return readStream(response);
  });

export const stopStringCompletions = loop('completions with stop strings', 'good', async ({ target, random }) => {
  const body = { model: target.llm, prompt: `Stop soon ${random(1000)} ${'words '.repeat(random(20))}`, max_tokens: 24, temperature: 0.8, seed: random(1 << 30), stop: ['e', 'a', 'o', ' '] };
  const response = await fetch(`${target.http}/v1/completions`, { method: 'POST', headers: json, body: JSON.stringify(body), signal: AbortSignal.timeout(target.requestTimeoutMs) });
  if (response.status !== 200) return { label: `HTTP ${response.status}`, ok: false };
  const reason = ((await response.json()) as { choices: { finish_reason: string }[] }).choices[0]?.finish_reason;
  return { label: `finish_reason ${reason}`, ok: reason === 'stop' || reason === 'length' };
});

export const embeddings = loop('embeddings', 'good', async ({ target, random }) => {
  const input = Array.from({ length: 1 + random(4) }, (_, i) => `sentence ${i} number ${random(10_000)}`);
  const response = await fetch(`${target.http}/v1/embeddings`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ model: target.encoder, input }),
    signal: AbortSignal.timeout(target.requestTimeoutMs),
  });
  if (response.status !== 200) return { label: `HTTP ${response.status}`, ok: false };
  const data = ((await response.json()) as { data: unknown[] }).data;
  return data.length === input.length ? { label: 'ok', ok: true } : { label: `${data.length} embeddings for ${input.length} inputs`, ok: false };
});

export const cnnInfer = loop('CNN infer (KServe binary)', 'good', async ({ target }) => {
  const response = await fetch(`${target.http}/v2/models/${target.cnn}/infer`, {
    method: 'POST',
    headers: target.cnnRequest.headers,
    body: target.cnnRequest.body,
    signal: AbortSignal.timeout(target.requestTimeoutMs),
  });
  const body = Buffer.from(await response.arrayBuffer());
  checkHttpResponse(response.status, body, response.headers.get('inference-header-content-length'), target.cnnMetadata);
  return { label: 'ok', ok: true };
});

export const badRequests = (cases: readonly BadRequest[] = BAD_REQUESTS): Actor => {
  let next = 0;
  return loop('bad requests', 'bad', async ({ target }) => {
    const bad = cases[next++ % cases.length]!;
    const response = await fetch(`${target.http}${bad.path(target)}`, { method: 'POST', headers: bad.headers ?? json, body: bad.body(target), signal: AbortSignal.timeout(target.requestTimeoutMs) });
    await response.arrayBuffer();
    return { label: `${bad.name}: ${response.status}`, ok: response.status >= 400 && response.status < 500 };
  });
};

export const hangUps = (index: number): Actor =>
  loop(`hang-up streams ${index}`, 'chaos', async ({ target, random }) => {
    const controller = new AbortController();
    const body = { model: target.llm, messages: [{ role: 'user', content: `Hang up ${random(1000)}` }], max_tokens: 64, ignore_eos: true, stream: true };
    const timeout = setTimeout(() => controller.abort(new Error('timed out')), target.requestTimeoutMs);
    try {
      const response = await fetch(`${target.http}/v1/chat/completions`, { method: 'POST', headers: json, body: JSON.stringify(body), signal: controller.signal });
      if (response.status !== 200) return { label: `HTTP ${response.status}`, ok: false };
      const reader = response.body!.getReader();
      // Counted in SSE events, not reads: a slow client's one read may hold many events, and a
      // stream of 64 tokens always has more events than the 1–3 it waits for.
      const wanted = 1 + random(3);
      const decoder = new TextDecoder();
      let events = 0;
      while (events < wanted) {
        const { done, value } = await reader.read();
        if (done) return { label: 'stream ended before the hang-up', ok: false };
        events += decoder.decode(value, { stream: true }).split('\n\n').length - 1;
      }
      controller.abort();
      return { label: `hung up after ${wanted} events`, ok: true };
    } finally {
      clearTimeout(timeout);
    }
  });

/**
 * Opens /v1/ws, starts long generations, floods bad frames and stops reading. The server must
 * drop it once its send buffer or send timeout is exceeded. A paused socket does not notice its
 * peer closing, so after `holdMs` the client reads again: a socket the server dropped then ends
 * as soon as the bytes already in the kernel are read; one it kept stays open.
 */
export const stalledWebSocket = (holdMs: number): Actor => ({
  name: 'WebSocket that stops reading',
  kind: 'chaos',
  async run(context) {
    const { target, tally, running, pause } = context;
    while (running()) {
      const label = await stallOnce(target, holdMs).catch((error: unknown) => describeError(error));
      tally.record('WebSocket that stops reading', 'chaos', label, label === 'dropped by the server');
      await pause(1000);
    }
  },
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

async function stallOnce(target: SoakTarget, holdMs: number): Promise<string> {
  const socket = new WebSocket(`${target.http.replace(/^http/, 'ws')}/v1/ws`);
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve('dropped by the server')));
  // 16 long generations (the per-socket cap), then 50,000 more that the cap refuses: every
  // refusal is an error frame, flow-controlled like any other, and together they outgrow the
  // kernel's socket buffers, so the server really holds output for a client that does not read.
  // (They are valid messages, so this is the send timeout's drop, not the invalid-message cap's.)
  const generate = (id: string) => JSON.stringify({ type: 'generate', id, model: target.llm, prompt: `Never read ${id}`, max_tokens: 3000, ignore_eos: true });
  for (let i = 0; i < 16; i++) socket.send(generate(`g${i}`));
  for (let i = 0; i < 50_000; i++) socket.send(generate(`over${i}`));
  const raw = (socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  raw.pause();
  // Not cut short by the soak's end: the verdict needs the whole hold.
  await sleep(holdMs);
  raw.resume();
  const outcome = await Promise.race([closed, sleep(10_000).then(() => 'still open after the hold')]);
  socket.terminate();
  return outcome;
}

/** Sends invalid messages while reading: the server must close the socket (1008) once they pass its cap. */
export const garbageWebSocket = loop('WebSocket sending garbage', 'chaos', async ({ target, pause }) => {
  const socket = new WebSocket(`${target.http.replace(/^http/, 'ws')}/v1/ws`);
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  for (let i = 0; i < 1000 && socket.readyState === WebSocket.OPEN; i++) socket.send('{"type":');
  const code = await Promise.race([closed, sleep(10_000).then(() => null)]);
  socket.terminate();
  await pause(1000);
  return code === 1008 ? { label: 'closed by the server (1008)', ok: true } : { label: code === null ? 'still open after 1,000 invalid messages' : `closed with ${code}`, ok: false };
});

/** Every `everyMs`, reloads the LLM with the other precision (fp32 ↔ int8) while traffic runs. */
export const precisionSwaps = (everyMs: number): Actor => ({
  name: 'precision swap',
  kind: 'good',
  async run(context) {
    const { target, tally, running, pause } = context;
    let precision = 'int8';
    await pause(everyMs / 2);
    while (running()) {
      const started = performance.now();
      const label = await swapTo(target, precision).catch((error: unknown) => describeError(error));
      tally.record('precision swap', 'good', label === 'ok' ? `to ${precision}: ok` : label, label === 'ok');
      if (label === 'ok') precision = precision === 'int8' ? 'fp32' : 'int8';
      await pause(Math.max(0, everyMs - (performance.now() - started)));
    }
  },
});

async function swapTo(target: SoakTarget, precision: string): Promise<string> {
  const current = await fetch(`${target.http}/v2/models/${target.llm}/config`);
  if (current.status !== 200) return `config: HTTP ${current.status}`;
  const config = (await current.json()) as { parameters?: Record<string, { string_value: string }> };
  config.parameters = { ...config.parameters, precision: { string_value: precision } };
  const response = await fetch(`${target.http}/v2/repository/models/${target.llm}/load`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ parameters: { config: JSON.stringify(config) } }),
    signal: AbortSignal.timeout(target.requestTimeoutMs * 2),
  });
  const text = await response.text();
  return response.status === 200 ? 'ok' : `load: HTTP ${response.status} ${text.slice(0, 120)}`;
}

const MiB = 1024 * 1024;

/**
 * A ~10 MB KServe JSON infer (the CNN at batch 14, its pixels as JSON numbers), every 2 s: the
 * server parses it on a parse worker, so the event loop must not lag behind it (issue 35).
 */
export const largeJsonInfers = (): Actor => {
  let body: Buffer | undefined;
  return loop('CNN infer, ~10 MB of JSON numbers', 'good', async ({ target, pause }) => {
    const input = target.cnnMetadata.inputs[0]!;
    const shape = [14, ...input.shape.slice(1)];
    body ??= Buffer.from(JSON.stringify({ inputs: [{ name: input.name, datatype: input.datatype, shape, data: Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => (i * 7) % 1009) }] }));
    const response = await fetch(`${target.http}/v2/models/${target.cnn}/infer`, { method: 'POST', body, signal: AbortSignal.timeout(target.requestTimeoutMs) });
    const answer = (await response.json()) as { outputs?: { shape: number[] }[] };
    await pause(2000);
    if (response.status !== 200) return { label: `HTTP ${response.status}`, ok: false };
    return answer.outputs?.[0]?.shape[0] === 14 ? { label: 'ok', ok: true } : { label: 'wrong output shape', ok: false };
  });
};

/**
 * Every 2 s, a 10 MB WebSocket frame: a short greedy generation carrying 10 × 1 MB stop strings
 * (it must end `done`), then the same frame cut short (it must be answered with an error frame).
 * The server reads both on a parse worker (issue 35); the socket stays open for the next round.
 */
export const largeWebSocketFrames = (): Actor => {
  let frames: { good: Buffer; bad: Buffer } | undefined;
  return loop('WebSocket 10 MB frames (good and bad)', 'good', async ({ target, pause }) => {
    if (!frames) {
      const stop = Array.from({ length: 10 }, (_, i) => `${String(i).padStart(4, '~')}${'\u00a7'.repeat(MiB / 2 - 4)}`);
      const text = JSON.stringify({ type: 'generate', id: 'big', model: target.llm, prompt: 'Tell me a story', max_tokens: 8, temperature: 0, stop });
      frames = { good: Buffer.from(text), bad: Buffer.from(text.slice(0, -1)) };
    }
    const socket = new WebSocket(`${target.http.replace(/^http/, 'ws')}/v1/ws`);
    socket.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
    const answers: { type: string }[] = [];
    const answered = (n: number) =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (answers.filter((a) => a.type === 'done' || a.type === 'error').length >= n) resolve();
        };
        socket.on('message', (data) => {
          answers.push(JSON.parse(String(data)) as { type: string });
          check();
        });
        socket.once('close', () => resolve());
      });
    const both = Promise.race([answered(2), sleep(target.requestTimeoutMs)]);
    socket.send(frames.good, { binary: false });
    socket.send(frames.bad, { binary: false });
    await both;
    socket.terminate();
    await pause(2000);
    // The bad frame's error may come before the generation's done.
    const ends = answers
      .filter((a) => a.type === 'done' || a.type === 'error')
      .map((a) => a.type)
      .sort();
    return ends.join(',') === 'done,error' ? { label: 'ok', ok: true } : { label: `answered ${ends.join(',') || 'nothing'}`, ok: false };
  });
};
