// One admission for every generation, whatever its protocol (src/serving/admission.ts): a server
// whose tiny LLM runs one sequence at a time, with --max-queued-requests 1. A long generation
// holds the engine's seat, so the first generation of a flood waits for its first token and
// fills the queue; every other one is refused, each protocol in its own words: OpenAI chat and
// Responses 503 service_unavailable with retry-after / retry-after-ms, Anthropic 529
// overloaded_error, Triton generate 503 {"error"} with retry-after, gRPC Generate UNAVAILABLE
// with grpc-retry-pushback-ms, ModelStreamInfer an error_message on the stream (UNAVAILABLE under
// triton_grpc_error), WebSocket an error frame with service_unavailable and retry_after_ms.
// The mixed tests show a generation waiting on one protocol shedding another's.
import * as grpc from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import type { GenerationEvent } from '../../src/contracts/text-generation.js';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';
import { grpcClients, type GrpcClients } from '../support/streams.js';

const LLM = 'qwen3';
const FLOOD = 8;
type Reply = Record<string, unknown>;

let server: TestServer;
let model: LlmModel;
let clients: GrpcClients;

beforeAll(async () => {
  const config = configOf('qwen3-tiny', LLM, (t) => t.replace('key: "max_num_seqs" value: { string_value: "32" }', 'key: "max_num_seqs" value: { string_value: "1" }'));
  const repository = await makeRepository([{ name: LLM, from: 'qwen3-tiny', config }]);
  server = await startTestServer(repository, ['--max-queued-requests', '1']);
  model = server.manager.resolve(LLM) as LlmModel;
  clients = grpcClients(server.grpcAddress);
}, 120_000);
afterAll(async () => {
  clients?.close();
  await server?.stop();
});

/** Long enough that only an abort ends it within a test (logprobs slow each step down). */
const LONG = { max_tokens: 4000, ignore_eos: true } as const;

/** The running generation that holds the engine's one seat, started on the model itself. */
let blocker: AbortController;

beforeEach(async () => {
  blocker = new AbortController();
  const prepared = await model.prepare({ prompt: { kind: 'tokens', tokenIds: [1000] }, sampling: { ...LONG, logprobs: 0 } });
  const events: AsyncGenerator<GenerationEvent> = model.generate(prepared, blocker.signal);
  await events.next();
  void (async () => {
    for await (const event of events) if (event.finishReason !== null && !blocker.signal.aborted) throw new Error(`the blocker finished by itself (${event.finishReason})`);
  })().catch(() => undefined);
});

afterEach(async () => {
  blocker.abort();
  await vi.waitFor(() => expect(model.engine.numActive).toBe(0), { timeout: 30_000, interval: 20 });
});

/** Waits until the engine holds the blocker and one waiting generation: the queue is full. */
const queueFull = () => vi.waitFor(() => expect(model.engine.numActive).toBe(2), { timeout: 30_000, interval: 10 });

interface HttpAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
}

/**
 * `count` POSTs of `body` to `path` at once; resolves with the answers of all but the one
 * admitted (which waits behind the blocker until this aborts it).
 */
async function httpFlood(path: string, body: object, count = FLOOD): Promise<HttpAnswer[]> {
  const controller = new AbortController();
  const answers: HttpAnswer[] = [];
  const requests = Array.from({ length: count }, () =>
    fetch(`${server.http}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: controller.signal })
      .then(async (response) => answers.push({ status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> }))
      .catch(() => undefined),
  );
  await vi.waitFor(() => expect(answers.length).toBe(count - 1), { timeout: 30_000, interval: 10 });
  controller.abort();
  await Promise.all(requests);
  return answers;
}

function expectRetryHeaders(headers: Headers): void {
  const ms = Number(headers.get('retry-after-ms'));
  expect(ms).toBeGreaterThan(0);
  expect(Number(headers.get('retry-after'))).toBe(Math.max(1, Math.ceil(ms / 1000)));
}

const chatBody = { model: LLM, messages: [{ role: 'user', content: 'Hello' }], ...LONG, stream: true };

describe('one admission, each protocol its own overload answer', () => {
  it('OpenAI chat completions: 503 service_unavailable with retry-after', async () => {
    const answers = await httpFlood('/v1/chat/completions', chatBody);
    for (const answer of answers) {
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ error: { type: 'server_error', code: 'service_unavailable' } });
      expectRetryHeaders(answer.headers);
    }
  });

  it('OpenAI Responses: 503 with retry-after', async () => {
    const answers = await httpFlood('/v1/responses', { model: LLM, input: 'Hello', max_output_tokens: 4000, stream: true });
    for (const answer of answers) {
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ error: { code: 'service_unavailable' } });
      expectRetryHeaders(answer.headers);
    }
  });

  it('Anthropic Messages: 529 overloaded_error with retry-after', async () => {
    const answers = await httpFlood('/v1/messages', { model: LLM, max_tokens: 4000, messages: [{ role: 'user', content: 'Hello' }], stream: true });
    for (const answer of answers) {
      expect(answer.status).toBe(529);
      expect(answer.body).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
      expectRetryHeaders(answer.headers);
    }
  });

  it('Triton generate and generate_stream: 503 with Triton\'s {"error"} and retry-after', async () => {
    for (const route of ['generate', 'generate_stream']) {
      const answers = await httpFlood(`/v2/models/${LLM}/${route}`, { text_input: 'Hello', parameters: LONG });
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(Object.keys(answer.body)).toEqual(['error']);
        expect(answer.body['error']).toMatch(/overloaded/);
        expectRetryHeaders(answer.headers);
      }
      await vi.waitFor(() => expect(model.engine.numActive).toBe(1), { timeout: 30_000, interval: 10 });
    }
  });

  it('WebSocket: an error frame with service_unavailable and retry_after_ms for that id', async () => {
    const socket = await openSocket();
    for (let i = 0; i < FLOOD; i++) socket.send({ type: 'generate', id: `g${i}`, model: LLM, prompt: 'Hello', ...LONG });
    const errors = await socket.waitForCount((m) => m.type === 'error', FLOOD - 1);
    for (const frame of errors) {
      expect(frame).toMatchObject({ type: 'error', error: { type: 'server_error', code: 'service_unavailable' } });
      expect(frame['retry_after_ms']).toBeGreaterThan(0);
    }
    expect(new Set(errors.map((m) => m.id)).size).toBe(FLOOD - 1);
    socket.close();
  });

  it('gRPC conveyor.v1 Generate: UNAVAILABLE with grpc-retry-pushback-ms', async () => {
    const calls = Array.from({ length: FLOOD }, (_, i) => generateCall({ model: LLM, request_id: `r${i}`, text: 'Hello', sampling: LONG }));
    const failures = await firstSettled(
      calls.map((c) => c.failure),
      FLOOD - 1,
    );
    for (const error of failures) {
      expect(error.code).toBe(grpc.status.UNAVAILABLE);
      expect(error.details).toMatch(/overloaded/);
      expect(Number(error.metadata.get('grpc-retry-pushback-ms')[0])).toBeGreaterThan(0);
    }
    for (const call of calls) call.cancel();
  });

  it('gRPC ModelStreamInfer: an error_message on the open stream; under triton_grpc_error the call ends UNAVAILABLE', async () => {
    const call = clients.inference['ModelStreamInfer']!() as grpc.ClientDuplexStream<Reply, Reply>;
    const errors: string[] = [];
    call.on('data', (r: Reply) => {
      if (r['error_message'] !== '') errors.push(String(r['error_message']));
    });
    call.on('error', () => undefined); // CANCELLED at the end
    for (let i = 0; i < FLOOD; i++) call.write(streamRequest(`s${i}`));
    await vi.waitFor(() => expect(errors.length).toBe(FLOOD - 1), { timeout: 30_000, interval: 10 });
    for (const message of errors) expect(message).toMatch(/overloaded.*Retry after \d+ ms/);
    await queueFull();
    // The queue is still full (the admitted request waits on the first call): a call opting in to gRPC errors ends with the status.
    const metadata = new grpc.Metadata();
    metadata.set('triton_grpc_error', 'true');
    const strict = clients.inference['ModelStreamInfer']!(metadata) as grpc.ClientDuplexStream<Reply, Reply>;
    const status = new Promise<grpc.ServiceError>((resolve) => strict.on('error', resolve));
    strict.on('data', () => undefined);
    strict.write(streamRequest('strict'));
    const error = await status;
    expect(error.code).toBe(grpc.status.UNAVAILABLE);
    expect(Number(error.metadata.get('grpc-retry-pushback-ms')[0])).toBeGreaterThan(0);
    call.cancel();
  });
});

describe('every protocol counts toward the same bound', () => {
  it('a WebSocket generation waiting sheds an OpenAI request', async () => {
    const socket = await openSocket();
    socket.send({ type: 'generate', id: 'waiting', model: LLM, prompt: 'Hello', ...LONG });
    await queueFull();
    const shed = await fetch(`${server.http}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...chatBody, stream: false }) });
    expect(shed.status).toBe(503);
    expectRetryHeaders(shed.headers);
    socket.close();
  });

  it('a gRPC Generate waiting sheds an Anthropic request and a Triton generate', async () => {
    const call = generateCall({ model: LLM, request_id: 'waiting', text: 'Hello', sampling: LONG });
    await queueFull();
    const body = { model: LLM, max_tokens: 8, messages: [{ role: 'user', content: 'Hello' }] };
    const anthropic = await fetch(`${server.http}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(anthropic.status).toBe(529);
    const triton = await fetch(`${server.http}/v2/models/${LLM}/generate`, { method: 'POST', body: JSON.stringify({ text_input: 'Hello' }) });
    expect(triton.status).toBe(503);
    call.cancel();
  });

  it('an OpenAI request waiting sheds a WebSocket generation and a gRPC Generate', async () => {
    const controller = new AbortController();
    const waiting = fetch(`${server.http}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chatBody), signal: controller.signal }).catch(
      () => undefined,
    );
    await queueFull();
    const socket = await openSocket();
    socket.send({ type: 'generate', id: 'shed', model: LLM, prompt: 'Hello', max_tokens: 4 });
    const [frame] = await socket.waitForCount((m) => m.id === 'shed', 1);
    expect(frame).toMatchObject({ type: 'error', error: { code: 'service_unavailable' } });
    socket.close();
    const grpcShed = generateCall({ model: LLM, request_id: 'shed', text: 'Hello', sampling: { max_tokens: 4 } });
    expect((await grpcShed.failure).code).toBe(grpc.status.UNAVAILABLE);
    controller.abort();
    await waiting;
  });
});

// ---------------------------------------------------------------------------------------------

type Frame = Record<string, unknown> & { type: string; id?: string };

async function openSocket(): Promise<{ send(message: object): void; waitForCount(match: (m: Frame) => boolean, count: number): Promise<Frame[]>; close(): void }> {
  const socket = new WebSocket(`ws://127.0.0.1:${server.httpPort}/v1/ws`);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  const frames: Frame[] = [];
  socket.on('message', (data) => frames.push(JSON.parse(String(data)) as Frame));
  return {
    send: (message) => socket.send(JSON.stringify(message)),
    waitForCount: async (match, count) => {
      await vi.waitFor(() => expect(frames.filter(match).length).toBe(count), { timeout: 30_000, interval: 10 });
      return frames.filter(match);
    },
    close: () => socket.close(),
  };
}

/** A Generate call: `failure` settles with its error status (never, while it runs). */
function generateCall(request: object): { readonly failure: Promise<grpc.ServiceError>; cancel(): void } {
  const call = clients.generation['Generate']!(request) as grpc.ClientReadableStream<Reply>;
  call.on('data', () => undefined);
  const failure = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
  return { failure, cancel: () => call.cancel() };
}

/** The first `count` of `promises` to settle, in the order they did. */
async function firstSettled<T>(promises: readonly Promise<T>[], count: number): Promise<T[]> {
  const settled: T[] = [];
  for (const promise of promises) void promise.then((value) => settled.push(value));
  await vi.waitFor(() => expect(settled.length).toBe(count), { timeout: 30_000, interval: 10 });
  return settled.slice(0, count);
}

function streamRequest(id: string): Reply {
  const inputs: Reply[] = [
    { name: 'text_input', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from('Hello', 'utf8')] } },
    { name: 'stream', datatype: 'BOOL', shape: [1], contents: { bool_contents: [true] } },
  ];
  return { model_name: LLM, id, inputs, parameters: { max_tokens: { int64_param: 4000 }, ignore_eos: { bool_param: true } } };
}
