// Triton's response cache on the real server: a model that enables it answers a repeated request
// from the cache without executing (the statistics' cache_hit, execution and inference counts and
// the nv_cache_* series say so), equal to the uncached answer, over KServe HTTP with JSON and with
// binary tensors and over gRPC alike; a different input or output request misses; unloading drops
// the entries; the cache is bounded by --cache-config local,size and evicts the least recently
// used; without a cache nothing is cached; a decoupled or LLM model enabling it is refused; an
// ensemble and its composing models each cache their own answers.
import { appendFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEnsemble, addRowModel } from '../support/ensemble-models.js';
import { parsePrometheusText, type PromFamily } from '../support/prometheus-text.js';
import { grpcClients, unaryCall, type GrpcClients } from '../support/streams.js';
import { configOf, loadModel, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const PIXELS = 3 * 224 * 224;
/** The logits entry of one image: 1000 floats, the name and a 2-d shape (responseBytes). */
const ENTRY_BYTES = 4000 + 'logits'.length + 16;
const CACHED = 'response_cache { enable: true }\n';

/** An image whose every value is a float32 exactly, so JSON and binary clients send the same bytes. */
function image(seed: number): Float32Array {
  const data = new Float32Array(PIXELS);
  for (let i = 0; i < PIXELS; i++) data[i] = Math.fround(Math.sin(i * 0.001 + seed));
  return data;
}

interface Answer {
  readonly id?: string;
  readonly logits: Float32Array;
}

async function inferJson(server: TestServer, model: string, pixels: Float32Array, extra: object = {}): Promise<Answer & { outputs: { data: unknown[] }[] }> {
  const response = await fetch(`${server.http}/v2/models/${model}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: Array.from(pixels) }], ...extra }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { id?: string; outputs: { data: number[] }[] };
  return { ...(body.id ? { id: body.id } : {}), logits: Float32Array.from(body.outputs[0]!.data), outputs: body.outputs };
}

async function inferBinary(server: TestServer, model: string, pixels: Float32Array, id: string): Promise<Answer> {
  const header = Buffer.from(
    JSON.stringify({
      id,
      inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], parameters: { binary_data_size: pixels.byteLength } }],
      outputs: [{ name: 'logits', parameters: { binary_data: true } }],
    }),
  );
  const response = await fetch(`${server.http}/v2/models/${model}/infer`, {
    method: 'POST',
    headers: { 'inference-header-content-length': String(header.length) },
    body: Buffer.concat([header, Buffer.from(pixels.buffer, pixels.byteOffset, pixels.byteLength)]),
  });
  expect(response.status).toBe(200);
  const raw = Buffer.from(await response.arrayBuffer());
  const jsonLength = Number(response.headers.get('inference-header-content-length'));
  const json = JSON.parse(raw.subarray(0, jsonLength).toString()) as { id?: string };
  return { ...(json.id ? { id: json.id } : {}), logits: new Float32Array(raw.buffer.slice(raw.byteOffset + jsonLength, raw.byteOffset + jsonLength + 4000)) };
}

async function inferGrpc(clients: GrpcClients, model: string, pixels: Float32Array, id: string): Promise<Answer> {
  const { reply, error } = await unaryCall(clients.inference, 'ModelInfer', {
    model_name: model,
    id,
    inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224] }],
    raw_input_contents: [Buffer.from(pixels.buffer, pixels.byteOffset, pixels.byteLength)],
  });
  expect(error).toBeUndefined();
  const raw = (reply!.raw_output_contents as Buffer[])[0]!;
  return { id: reply!.id as string, logits: new Float32Array(new Uint8Array(raw).buffer) };
}

interface Duration {
  count: number;
  ns: number;
}
interface Stats {
  inference_count: number;
  execution_count: number;
  inference_stats: Record<'success' | 'queue' | 'compute_infer' | 'cache_hit' | 'cache_miss', Duration>;
}

async function statsOf(server: TestServer, model: string): Promise<Stats> {
  const response = await fetch(`${server.http}/v2/models/${model}/stats`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { model_stats: Stats[] }).model_stats[0]!;
}

async function scrape(server: TestServer): Promise<Map<string, PromFamily>> {
  const response = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`);
  expect(response.status).toBe(200);
  return parsePrometheusText(await response.text());
}

/** The one sample of `name` whose labels include `labels`, or undefined when there is none. */
function sample(families: Map<string, PromFamily>, name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  const found = (families.get(name)?.samples ?? []).filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  expect(found.length, name).toBeLessThanOrEqual(1);
  return found[0]?.value;
}

describe('response cache (--cache-config local)', () => {
  let server: TestServer;
  let grpc: GrpcClients;

  beforeAll(async () => {
    const repository = await makeRepository([
      { name: 'resnet-cached', from: 'resnet-tiny', config: configOf('resnet-tiny', 'resnet-cached') + CACHED },
      { name: 'resnet', from: 'resnet-tiny', config: configOf('resnet-tiny', 'resnet') },
      { name: 'llm-decoupled-cached', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'llm-decoupled-cached') + CACHED },
      {
        name: 'llm-cached',
        from: 'qwen3-tiny',
        config: configOf('qwen3-tiny', 'llm-cached', (t) => t.replace(/model_transaction_policy \{\s*decoupled: true\s*\}/, '')) + CACHED,
      },
    ]);
    server = await startTestServer(repository, ['--model-control-mode', 'explicit', '--load-model', 'resnet-cached', '--load-model', 'resnet', '--cache-config', 'local,size=1048576']);
    grpc = grpcClients(server.grpcAddress);
  }, 120_000);

  afterAll(async () => {
    grpc?.close();
    await server?.stop();
  });

  it('answers a repeated request from the cache, equal to the uncached answer, over JSON, binary and gRPC', async () => {
    const pixels = image(1);
    const uncached = await inferJson(server, 'resnet', pixels);
    const first = await inferJson(server, 'resnet-cached', pixels, { id: 'first' });
    expect(first.id).toBe('first');
    expect(first.logits).toEqual(uncached.logits);
    expect(await statsOf(server, 'resnet-cached')).toMatchObject({ execution_count: 1, inference_count: 1, inference_stats: { cache_hit: { count: 0 }, cache_miss: { count: 1 } } });

    const again = await inferJson(server, 'resnet-cached', pixels, { id: 'again' });
    const binary = await inferBinary(server, 'resnet-cached', pixels, 'binary');
    const overGrpc = await inferGrpc(grpc, 'resnet-cached', pixels, 'grpc');
    // Every answer is the uncached one, and echoes its own request's id.
    expect(again).toEqual({ ...first, id: 'again' });
    expect(binary).toEqual({ id: 'binary', logits: uncached.logits });
    expect(overGrpc).toEqual({ id: 'grpc', logits: uncached.logits });

    const stats = await statsOf(server, 'resnet-cached');
    // Three hits: counted as successes, none executed, none in a compute phase.
    expect(stats).toMatchObject({ execution_count: 1, inference_count: 1 });
    expect(stats.inference_stats).toMatchObject({ success: { count: 4 }, queue: { count: 4 }, compute_infer: { count: 1 }, cache_hit: { count: 3 }, cache_miss: { count: 1 } });
    expect(stats.inference_stats.cache_hit.ns).toBeGreaterThan(0);
    expect(stats.inference_stats.cache_miss.ns).toBeGreaterThan(0);
    // gRPC's ModelStatistics reports the same fields.
    const { reply } = await unaryCall(grpc.inference, 'ModelStatistics', { name: 'resnet-cached' });
    const grpcStats = (reply!.model_stats as { inference_stats: Record<string, { count: string }> }[])[0]!;
    expect(grpcStats.inference_stats.cache_hit!.count).toBe('3');
    expect(grpcStats.inference_stats.cache_miss!.count).toBe('1');
  });

  it('misses for a different input and for a different output request (classification)', async () => {
    const before = await statsOf(server, 'resnet-cached');
    const other = image(2);
    const answer = await inferBinary(server, 'resnet-cached', other, 'other');
    expect(answer.logits).toEqual((await inferBinary(server, 'resnet', other, 'plain')).logits);
    const top3 = { outputs: [{ name: 'logits', parameters: { classification: 3 } }] };
    const classified = await inferJson(server, 'resnet-cached', other, top3);
    expect(classified.outputs[0]!.data).toHaveLength(3);
    expect((await inferJson(server, 'resnet-cached', other, top3)).outputs).toEqual(classified.outputs);
    const after = await statsOf(server, 'resnet-cached');
    expect(after.execution_count - before.execution_count).toBe(2);
    expect(after.inference_stats.cache_miss.count - before.inference_stats.cache_miss.count).toBe(2);
    expect(after.inference_stats.cache_hit.count - before.inference_stats.cache_hit.count).toBe(1);
  });

  it("exports Triton's per-model and server-wide cache series, the per-model ones only for a caching model", async () => {
    const families = await scrape(server);
    const stats = await statsOf(server, 'resnet-cached');
    const cached = { model: 'resnet-cached', version: '1' };
    expect(families.get('nv_cache_num_hits_per_model')?.type).toBe('counter');
    expect(sample(families, 'nv_cache_num_hits_per_model', cached)).toBe(stats.inference_stats.cache_hit.count);
    expect(sample(families, 'nv_cache_num_misses_per_model', cached)).toBe(stats.inference_stats.cache_miss.count);
    expect(sample(families, 'nv_cache_hit_duration_per_model', cached)).toBe(Math.floor(stats.inference_stats.cache_hit.ns / 1000));
    expect(sample(families, 'nv_cache_miss_duration_per_model', cached)).toBe(Math.floor(stats.inference_stats.cache_miss.ns / 1000));
    expect(sample(families, 'nv_cache_num_hits_per_model', { model: 'resnet' })).toBeUndefined();
    // Hits are successes in Triton's request metrics, and not inferences or executions.
    expect(sample(families, 'nv_inference_request_success', cached)).toBe(stats.inference_stats.success.count);
    expect(sample(families, 'nv_inference_exec_count', cached)).toBe(stats.execution_count);
    // Server-wide: the three entries stored so far (plain logits of two images, one classification).
    expect(families.get('nv_cache_num_entries')?.type).toBe('gauge');
    expect(sample(families, 'nv_cache_num_entries')).toBe(3);
    expect(sample(families, 'nv_cache_num_hits')).toBe(stats.inference_stats.cache_hit.count);
    expect(sample(families, 'nv_cache_num_misses')).toBe(stats.inference_stats.cache_miss.count);
    expect(sample(families, 'nv_cache_num_lookups')).toBe(stats.inference_stats.cache_hit.count + stats.inference_stats.cache_miss.count);
    expect(sample(families, 'nv_cache_num_evictions')).toBe(0);
    expect(sample(families, 'nv_cache_util')).toBeGreaterThan(0);
    expect(sample(families, 'nv_cache_util')).toBeLessThan(0.02);
    expect(sample(families, 'nv_cache_lookup_duration')).toBeGreaterThanOrEqual(0);
    expect(sample(families, 'nv_cache_insertion_duration')).toBeGreaterThanOrEqual(0);
  });

  it('drops a model version’s entries when it unloads, and a reloaded version starts empty', async () => {
    const unload = await fetch(`${server.http}/v2/repository/models/resnet-cached/unload`, { method: 'POST' });
    expect(unload.status).toBe(200);
    expect(sample(await scrape(server), 'nv_cache_num_entries')).toBe(0);
    expect(await loadModel(server, 'resnet-cached')).toEqual({ status: 200, error: '' });
    await inferBinary(server, 'resnet-cached', image(1), 'reloaded');
    expect(await statsOf(server, 'resnet-cached')).toMatchObject({ execution_count: 1, inference_stats: { cache_hit: { count: 0 }, cache_miss: { count: 1 } } });
  });

  it('refuses a decoupled model, and an LLM, that enable it', async () => {
    const decoupled = await loadModel(server, 'llm-decoupled-cached');
    expect(decoupled.status).toBe(400);
    expect(decoupled.error).toContain('response_cache cannot be enabled for a decoupled model');
    const llm = await loadModel(server, 'llm-cached');
    expect(llm.status).toBe(400);
    expect(llm.error).toBe("failed to load 'llm-cached': response_cache cannot be enabled for backend 'llm': generation streams and samples, so there is no single response to reuse");
  });
});

describe('response cache bounds', () => {
  let server: TestServer;

  beforeAll(async () => {
    const repository = await makeRepository([{ name: 'resnet-cached', from: 'resnet-tiny', config: configOf('resnet-tiny', 'resnet-cached') + CACHED }]);
    // Room for two entries, not three.
    server = await startTestServer(repository, [`--cache-config=local,size=${2 * ENTRY_BYTES + 100}`]);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('evicts the least recently used entry at the size bound', async () => {
    const [a, b, c] = [image(11), image(12), image(13)];
    await inferBinary(server, 'resnet-cached', a, 'a');
    await inferBinary(server, 'resnet-cached', b, 'b');
    await inferBinary(server, 'resnet-cached', a, 'a-hit'); // a is now the most recent: b goes next
    await inferBinary(server, 'resnet-cached', c, 'c');
    let families = await scrape(server);
    expect(sample(families, 'nv_cache_num_entries')).toBe(2);
    expect(sample(families, 'nv_cache_num_evictions')).toBe(1);
    expect(sample(families, 'nv_cache_util')).toBeCloseTo((2 * ENTRY_BYTES) / (2 * ENTRY_BYTES + 100), 6);
    const before = await statsOf(server, 'resnet-cached');
    await inferBinary(server, 'resnet-cached', a, 'a-kept');
    await inferBinary(server, 'resnet-cached', b, 'b-evicted');
    const after = await statsOf(server, 'resnet-cached');
    expect(after.inference_stats.cache_hit.count - before.inference_stats.cache_hit.count).toBe(1);
    expect(after.execution_count - before.execution_count).toBe(1);
    families = await scrape(server);
    expect(sample(families, 'nv_cache_num_evictions')).toBe(2);
  });
});

describe('response cache without --cache-config', () => {
  let server: TestServer;

  beforeAll(async () => {
    const repository = await makeRepository([{ name: 'resnet-cached', from: 'resnet-tiny', config: configOf('resnet-tiny', 'resnet-cached') + CACHED }]);
    server = await startTestServer(repository);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('is off, as in Triton: the model loads, executes every request, and the log says why', async () => {
    const pixels = image(21);
    const first = await inferBinary(server, 'resnet-cached', pixels, 'one');
    const second = await inferBinary(server, 'resnet-cached', pixels, 'two');
    expect(second.logits).toEqual(first.logits);
    expect(await statsOf(server, 'resnet-cached')).toMatchObject({ execution_count: 2, inference_stats: { cache_hit: { count: 0 }, cache_miss: { count: 0 } } });
    expect(server.logs).toContain('resnet-cached: version 1 enables response_cache, but the server has no cache (--cache-config local,size=BYTES): its responses are not cached');
    const families = await scrape(server);
    expect(families.get('nv_cache_num_entries')?.samples ?? []).toEqual([]);
    expect(sample(families, 'nv_cache_num_hits_per_model', { model: 'resnet-cached' })).toBeUndefined();
  });
});

describe('response cache in an ensemble', () => {
  let server: TestServer;
  const WIDTH = 4;
  const x = [1, 2, 3, 4];

  beforeAll(async () => {
    const root = await mkdtemp(join(tmpdir(), 'conveyor-cache-ensemble-'));
    await addRowModel(root, 'double', 'double', WIDTH, 0);
    await appendFile(join(root, 'double', 'config.pbtxt'), CACHED);
    await addRowModel(root, 'increment', 'increment', WIDTH, 0);
    const step = (model: string, from: string, to: string) => `{ model_name: "${model}" model_version: -1 input_map { key: "x" value: "${from}" } output_map { key: "y" value: "${to}" } }`;
    await addEnsemble(
      root,
      'pipe',
      `name: "pipe"
platform: "ensemble"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ ${WIDTH} ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ ${WIDTH} ] } ]
ensemble_scheduling { step [ ${step('double', 'x', 'doubled')}, ${step('increment', 'doubled', 'y')} ] }
${CACHED}`,
    );
    server = await startTestServer(root, ['--cache-config', 'local,size=65536']);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  const infer = async (model: string): Promise<number[]> => {
    const response = await fetch(`${server.http}/v2/models/${model}/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, WIDTH], data: x }] }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data;
  };

  it('answers a repeated ensemble request from its own entry, and a composing model from the one its step stored', async () => {
    expect(await infer('pipe')).toEqual([3, 5, 7, 9]);
    expect(await infer('pipe')).toEqual([3, 5, 7, 9]);
    expect(await statsOf(server, 'pipe')).toMatchObject({ execution_count: 1, inference_stats: { success: { count: 2 }, cache_hit: { count: 1 }, cache_miss: { count: 1 } } });
    // The second request never reached the steps.
    expect(await statsOf(server, 'increment')).toMatchObject({ execution_count: 1, inference_stats: { success: { count: 1 } } });
    expect(await statsOf(server, 'double')).toMatchObject({ execution_count: 1, inference_stats: { cache_hit: { count: 0 }, cache_miss: { count: 1 } } });
    // The step's request to `double` was the same as this one: its answer is in the cache.
    expect(await infer('double')).toEqual([2, 4, 6, 8]);
    expect(await statsOf(server, 'double')).toMatchObject({ execution_count: 1, inference_stats: { cache_hit: { count: 1 } } });
  });
});
