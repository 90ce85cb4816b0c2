// Models on demand against the real server (Ollama / llama.cpp router style): a first request
// loads a repository model (concurrent ones share one load), /v1/models lists what is loadable
// with its state, the least recently used idle model makes room and a busy one never does,
// keep_alive unloads idle models (config.pbtxt parameter, request field), and vLLM's
// /sleep, /wake_up, /is_sleeping. Waits poll for the state meant, with a deadline.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import OpenAI, { APIError, BadRequestError } from 'openai';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const servers: TestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

const start = async (repository: string, args: readonly string[]): Promise<TestServer> => {
  const server = await startTestServer(repository, ['--model-control-mode', 'explicit', '--load-on-demand', 'true', ...args]);
  servers.push(server);
  return server;
};
const waitFor = async (check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> => {
  await vi.waitFor(async () => expect(await check()).toBe(true), { timeout: timeoutMs, interval: 50 });
};
const image = Array.from({ length: 3 * 224 * 224 }, (_, i) => Math.cos(i * 0.003));
const infer = (s: TestServer, model: string) =>
  fetch(`${s.http}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: image }] }) });
const cards = async (s: TestServer): Promise<Record<string, string>> => {
  const body = (await (await fetch(`${s.http}/v1/models`)).json()) as { data: { id: string; state: string }[] };
  return Object.fromEntries(body.data.map((m) => [m.id, m.state]));
};
const metric = async (s: TestServer, sample: string): Promise<number> => {
  const text = await (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? 0 : Number(line.slice(sample.length + 1));
};
const loaded = (s: TestServer): string[] => s.manager.loadedNames().sort();
/** A repository holding only the tiny Qwen3, served as `qwen3`. */
const qwen3Repository = (): Promise<string> => makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
/** A /v1/ws socket to the server, once open. */
async function openSocket(s: TestServer): Promise<WebSocket> {
  const socket = new WebSocket(`ws://127.0.0.1:${s.httpPort}/v1/ws`);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  return socket;
}
const slowQueue = (t: string) => t.replace('max_queue_delay_microseconds: 5000', 'max_queue_delay_microseconds: 3000000');

describe('an LLM and an embedding model on demand', () => {
  let server: TestServer;
  let client: OpenAI;
  beforeAll(async () => {
    const repository = await makeRepository([
      { name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') },
      { name: 'bert', from: 'bert-tiny', config: `${configOf('bert-tiny', 'bert')}\nparameters: { key: "keep_alive" value: { string_value: "300ms" } }\n` },
      { name: 'cnn', from: 'resnet-tiny', config: configOf('resnet-tiny', 'cnn') },
    ]);
    server = await start(repository, ['--keep-alive=-1']);
    client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
  }, 120_000);

  it('lists loadable models as UNLOADED, then loads one once for concurrent first requests and serves them all', async () => {
    expect(loaded(server)).toEqual([]);
    expect(await cards(server)).toEqual({ bert: 'UNLOADED', qwen3: 'UNLOADED' });
    const unloaded = await client.models.retrieve('qwen3');
    expect(unloaded).toMatchObject({ id: 'qwen3', object: 'model', root: 'qwen3', state: 'UNLOADED', capabilities: { text_generation: true, tool_calls: true } });
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, i) => client.chat.completions.create({ model: 'qwen3', messages: [{ role: 'user', content: `hello ${i}` }], max_tokens: 4, temperature: 0 })),
    );
    for (const answer of answers) expect(answer.choices[0]!.message.content).toEqual(expect.any(String));
    expect(server.logs.filter((l) => l === 'qwen3: version 1 READY')).toHaveLength(1);
    expect(await metric(server, 'conveyor_model_loads_total{model="qwen3",result="success"}')).toBe(1);
    expect(await metric(server, 'conveyor_model_load_duration_seconds_count{model="qwen3"}')).toBe(1);
    expect(await metric(server, 'conveyor_model_loaded{model="qwen3"}')).toBe(1);
    expect((await cards(server)).qwen3).toBe('READY');
    expect(loaded(server)).toEqual(['qwen3']);
  }, 120_000);

  it('a KServe request loads a classic model too', async () => {
    expect((await infer(server, 'cnn')).status).toBe(200);
    expect(loaded(server)).toContain('cnn');
  }, 60_000);

  it('unloads an idle model after its config.pbtxt keep_alive; the next request loads it again', async () => {
    const first = await client.embeddings.create({ model: 'bert', input: 'a sentence' });
    expect(first.data[0]!.embedding.length).toBeGreaterThan(0);
    await waitFor(async () => (await cards(server)).bert === 'UNLOADED');
    expect(loaded(server)).not.toContain('bert');
    expect(await metric(server, 'conveyor_model_unloads_total{model="bert",reason="idle"}')).toBe(1);
    expect(await metric(server, 'conveyor_model_loaded{model="bert"}')).toBe(0);
    const again = await client.embeddings.create({ model: 'bert', input: 'a sentence' });
    expect(again.data[0]!.embedding).toEqual(first.data[0]!.embedding);
    expect(await metric(server, 'conveyor_model_loads_total{model="bert",result="success"}')).toBe(2);
  }, 60_000);

  it('refuses a bad keep_alive naming the field, and loads nothing', async () => {
    const before = loaded(server);
    const error = await client.chat.completions.create({ model: 'bert', messages: [{ role: 'user', content: 'x' }], keep_alive: 'soon' } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).error).toMatchObject({ param: 'keep_alive', message: expect.stringMatching(/keep_alive must be a duration/) });
    expect(loaded(server)).toEqual(before);
  });

  it('sleep releases the LLM, refuses its requests with a 503, and wake_up restores the same config', async () => {
    const config = await (await fetch(`${server.http}/v2/models/qwen3/config`)).json();
    expect(await (await fetch(`${server.http}/is_sleeping?model=qwen3`)).json()).toEqual({ is_sleeping: false });
    expect((await fetch(`${server.http}/sleep?level=3`, { method: 'POST' })).status).toBe(400);
    expect((await fetch(`${server.http}/sleep?level=1&model=qwen3`, { method: 'POST' })).status).toBe(200);
    expect(await (await fetch(`${server.http}/is_sleeping`)).json()).toEqual({ is_sleeping: true });
    expect(loaded(server)).not.toContain('qwen3');
    expect((await cards(server)).qwen3).toBe('SLEEPING');
    expect(await metric(server, 'conveyor_model_unloads_total{model="qwen3",reason="sleep"}')).toBe(1);
    const refused = await client.chat.completions.create({ model: 'qwen3', messages: [{ role: 'user', content: 'x' }], max_tokens: 2 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(APIError);
    expect((refused as APIError).status).toBe(503);
    expect((refused as APIError).message).toMatch(/sleeping; POST \/wake_up\?model=qwen3/);
    // Triton's generate route answers in its own shape.
    const generate = await fetch(`${server.http}/v2/models/qwen3/generate`, { method: 'POST', body: JSON.stringify({ text_input: 'x' }) });
    expect(generate.status).toBe(503);
    expect(await generate.json()).toEqual({ error: expect.stringMatching(/sleeping/) });

    expect((await fetch(`${server.http}/wake_up`, { method: 'POST' })).status).toBe(200);
    expect(await (await fetch(`${server.http}/is_sleeping?model=qwen3`)).json()).toEqual({ is_sleeping: false });
    expect(await (await fetch(`${server.http}/v2/models/qwen3/config`)).json()).toEqual(config);
    const served = await client.chat.completions.create({ model: 'qwen3', messages: [{ role: 'user', content: 'x' }], max_tokens: 2 });
    expect(served.choices[0]!.finish_reason).toBe('length');
    expect((await fetch(`${server.http}/sleep?model=absent`, { method: 'POST' })).status).toBe(404);
  }, 120_000);

  it('a request keep_alive of 0 unloads the model once its request is done', async () => {
    await client.chat.completions.create({ model: 'qwen3', messages: [{ role: 'user', content: 'x' }], max_tokens: 2, keep_alive: 0 } as never);
    await waitFor(async () => (await cards(server)).qwen3 === 'UNLOADED');
    expect(await metric(server, 'conveyor_model_unloads_total{model="qwen3",reason="idle"}')).toBe(1);
  }, 60_000);
});

describe('the load timeout', () => {
  it('a request that waits past --load-timeout-secs gets a 503; the load goes on and other models keep serving', async () => {
    const repository = await makeRepository([
      { name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') },
      { name: 'cnn', from: 'resnet-tiny', config: configOf('resnet-tiny', 'cnn') },
    ]);
    const server = await start(repository, ['--load-timeout-secs', '0.001']);
    // The repository API's loads count in the lifecycle metrics too.
    expect((await fetch(`${server.http}/v2/repository/models/cnn/load`, { method: 'POST' })).status).toBe(200);
    expect(await metric(server, 'conveyor_model_loads_total{model="cnn",result="success"}')).toBe(1);
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const timedOut = await client.completions.create({ model: 'qwen3', prompt: 'x', max_tokens: 2 }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(APIError);
    expect((timedOut as APIError).status).toBe(503);
    expect((timedOut as APIError).message).toMatch(/still loading after 0\.001 s \(--load-timeout-secs\)/);
    expect((await infer(server, 'cnn')).status).toBe(200);
    await waitFor(async () => (await cards(server)).qwen3 === 'READY');
    expect((await client.completions.create({ model: 'qwen3', prompt: 'x', max_tokens: 2 })).choices[0]!.finish_reason).toBe('length');
    expect(server.logs.filter((l) => l === 'qwen3: version 1 READY')).toHaveLength(1);
  }, 120_000);
});

describe('gRPC', () => {
  it('conveyor.v1.GenerationService/Generate loads the LLM on demand', async () => {
    const repository = await qwen3Repository();
    const server = await start(repository, []);
    const definition = loadSync(['generate.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [join(import.meta.dirname, '..', '..', 'protos')] });
    const root = grpc.loadPackageDefinition(definition) as unknown as { conveyor: { v1: { GenerationService: new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client } } };
    const client = new root.conveyor.v1.GenerationService(server.grpcAddress, grpc.credentials.createInsecure()) as grpc.Client &
      Record<string, (request: object) => grpc.ClientReadableStream<Record<string, unknown>>>;
    try {
      const events = await new Promise<string[]>((resolve, reject) => {
        const seen: string[] = [];
        const call = client['Generate']!({ model: 'qwen3', request_id: 'g1', chat: { messages: [{ role: 'user', content: 'hi' }] }, sampling: { max_tokens: 2 } });
        call.on('data', (m) => seen.push(String(m['event'])));
        call.on('error', reject);
        call.on('end', () => resolve(seen));
      });
      expect(events.at(-1)).toBe('final');
      expect(loaded(server)).toEqual(['qwen3']);
    } finally {
      client.close();
    }
  }, 120_000);
});

describe('WebSocket', () => {
  it('a /v1/ws generation loads the LLM on demand, and holds it until done', async () => {
    const repository = await qwen3Repository();
    // keep_alive 0: the model goes as soon as its last lease is released, so it stays only while the socket's generation holds one.
    const server = await start(repository, ['--keep-alive=0']);
    const socket = await openSocket(server);
    try {
      const frames: { type: string; loaded: string[] }[] = [];
      const done = new Promise<void>((resolve) =>
        socket.on('message', (data) => {
          const frame = JSON.parse(String(data)) as { type: string };
          frames.push({ type: frame.type, loaded: loaded(server) });
          if (frame.type === 'done' || frame.type === 'error') resolve();
        }),
      );
      socket.send(JSON.stringify({ type: 'generate', id: 'w1', model: 'qwen3', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, ignore_eos: true }));
      await done;
      expect(frames.at(-1)!.type).toBe('done');
      expect(frames.length).toBeGreaterThan(1); // deltas, then done
      // Loaded for every frame of the stream; gone once the lease is released (keep_alive 0).
      for (const frame of frames) expect(frame.loaded).toEqual(['qwen3']);
      await waitFor(async () => loaded(server).length === 0);
    } finally {
      socket.close();
    }
  }, 120_000);
});

describe('WebSocket closed during the load', () => {
  it('a socket that closes while its first request loads the model releases the lease: the model goes (keep_alive 0) and the next socket is served', async () => {
    const repository = await qwen3Repository();
    const server = await start(repository, ['--keep-alive=0']);
    const request = { type: 'generate', model: 'qwen3', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 };
    const first = await openSocket(server);
    first.send(JSON.stringify({ ...request, id: 'gone' }));
    // Close once the load has begun (the model is LOADING), before it is ready.
    await waitFor(async () => (await cards(server)).qwen3 === 'LOADING', 30_000);
    first.terminate();
    // The load finishes, nobody holds a lease, keep_alive 0: the model unloads.
    await waitFor(async () => (await cards(server)).qwen3 === 'UNLOADED');
    expect(loaded(server)).toEqual([]);
    const second = await openSocket(server);
    try {
      const done = new Promise<string>((resolve) =>
        second.on('message', (data) => {
          const frame = JSON.parse(String(data)) as { type: string };
          if (frame.type === 'done' || frame.type === 'error') resolve(frame.type);
        }),
      );
      second.send(JSON.stringify({ ...request, id: 'next' }));
      expect(await done).toBe('done');
    } finally {
      second.close();
    }
  }, 120_000);
});

describe('WebSocket keep_alive', () => {
  it('a /v1/ws keep_alive of 0 unloads the model once done; a bad one is refused naming the field, and loads nothing', async () => {
    const repository = await qwen3Repository();
    const server = await start(repository, ['--keep-alive=-1']);
    const socket = await openSocket(server);
    const answers = new Map<string, (frame: { type: string; error?: { param?: string } }) => void>();
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { type: string; id: string };
      if (frame.type === 'done' || frame.type === 'error') answers.get(frame.id)?.(frame);
    });
    const generate = (id: string, keepAlive: unknown) =>
      new Promise<{ type: string; error?: { param?: string } }>((resolve) => {
        answers.set(id, resolve);
        socket.send(JSON.stringify({ type: 'generate', id, model: 'qwen3', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, keep_alive: keepAlive }));
      });
    try {
      const refused = await generate('bad', 'soon');
      expect(refused.type).toBe('error');
      expect(refused.error?.param).toBe('keep_alive');
      expect(loaded(server)).toEqual([]);
      expect((await generate('zero', 0)).type).toBe('done');
      // The server keeps models forever (--keep-alive=-1); this request's 0 unloads it once idle.
      await waitFor(async () => loaded(server).length === 0);
    } finally {
      socket.close();
    }
  }, 120_000);
});

describe('gRPC ModelStreamInfer', () => {
  it('loads a decoupled LLM on its first request and streams it (the config is read once the model is loaded)', async () => {
    const repository = await qwen3Repository();
    const server = await start(repository, []);
    const definition = loadSync(['grpc_service.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [join(import.meta.dirname, '..', '..', 'protos')] });
    const root = grpc.loadPackageDefinition(definition) as unknown as { inference: { GRPCInferenceService: new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client } };
    const client = new root.inference.GRPCInferenceService(server.grpcAddress, grpc.credentials.createInsecure()) as grpc.Client &
      Record<string, () => grpc.ClientDuplexStream<object, Record<string, unknown>>>;
    try {
      const responses = await new Promise<Record<string, unknown>[]>((resolve, reject) => {
        const seen: Record<string, unknown>[] = [];
        const call = client['ModelStreamInfer']!();
        call.on('data', (r) => seen.push(r));
        call.on('error', reject);
        call.on('end', () => resolve(seen));
        const inputs = [
          { name: 'text_input', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from('Hello')] } },
          { name: 'stream', datatype: 'BOOL', shape: [1], contents: { bool_contents: [true] } },
          { name: 'max_tokens', datatype: 'INT32', shape: [1], contents: { int_contents: [3] } },
        ];
        call.write({ model_name: 'qwen3', id: 's1', inputs, parameters: {} });
        call.end();
      });
      expect(responses.map((r) => r['error_message'])).toEqual(responses.map(() => ''));
      expect(responses.length).toBeGreaterThanOrEqual(1);
      const last = responses.at(-1)!['infer_response'] as { parameters: Record<string, { bool_param?: boolean }> };
      expect(last.parameters['triton_final_response']?.bool_param).toBe(true);
      expect(loaded(server)).toEqual(['qwen3']);
    } finally {
      client.close();
    }
  }, 120_000);
});

describe('eviction', () => {
  it('past --max-loaded-models, the least recently used idle model goes', async () => {
    const repository = await makeRepository(['a', 'b', 'c'].map((name) => ({ name, from: 'resnet-tiny', config: configOf('resnet-tiny', name) })));
    const server = await start(repository, ['--max-loaded-models', '2']);
    for (const name of ['a', 'b', 'a']) expect((await infer(server, name)).status).toBe(200);
    expect(loaded(server)).toEqual(['a', 'b']);
    expect((await infer(server, 'c')).status).toBe(200);
    expect(loaded(server)).toEqual(['a', 'c']);
    expect(await metric(server, 'conveyor_model_evictions_total{model="b"}')).toBe(1);
    expect(await metric(server, 'conveyor_model_unloads_total{model="b",reason="evicted"}')).toBe(1);
  }, 60_000);

  it('never evicts a model with requests in flight: the new one gets a 503, then loads once the busy one is idle', async () => {
    const repository = await makeRepository([
      { name: 'slow', from: 'resnet-tiny', config: configOf('resnet-tiny', 'slow', slowQueue) },
      { name: 'other', from: 'resnet-tiny', config: configOf('resnet-tiny', 'other') },
    ]);
    // One resnet-tiny (model.onnx, about 0.6 MB) fits; two do not.
    const server = await start(repository, ['--max-loaded-model-bytes', '800000']);
    const inFlight = Array.from({ length: 3 }, () => infer(server, 'slow'));
    await waitFor(async () => loaded(server).includes('slow') && server.manager.resolve('slow').pendingRequests?.() === 3);
    const refused = await infer(server, 'other');
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({ error: expect.stringMatching(/cannot load model 'other' now: .*serving requests \(slow\)/) });
    expect(loaded(server)).toEqual(['slow']);
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([200, 200, 200]);
    expect((await infer(server, 'other')).status).toBe(200);
    expect(loaded(server)).toEqual(['other']);
    expect(await metric(server, 'conveyor_model_evictions_total{model="slow"}')).toBe(1);
  }, 60_000);

  it('refuses a model larger than the memory limit, in OpenAI shape on the OpenAI routes', async () => {
    const repository = await makeRepository([{ name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') }]);
    const server = await start(repository, ['--max-loaded-model-bytes', '1000']);
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const error = await client.embeddings.create({ model: 'bert', input: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(503);
    expect((error as APIError).message).toMatch(/cannot load model 'bert' now: it needs about .* MiB and the limit/);
    expect(loaded(server)).toEqual([]);
  }, 60_000);
});
