// KServe v2 REST against the real server: real models in worker threads behind the dynamic
// batcher, plain HTTP clients speaking JSON and Triton's binary tensor extension.
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.http}${path}`, { method: 'POST', body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body), headers });
const image = (batch: number, seed = 1) => Array.from({ length: batch * 3 * 224 * 224 }, (_, i) => Math.sin((i + seed) * 0.01));
const bertInputs = (ids: number[][]) =>
  ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({
    name,
    datatype: 'INT64',
    shape: [ids.length, ids[0]!.length],
    data: ids.flat().map((id) => (name === 'input_ids' ? id : name === 'attention_mask' ? 1 : 0)),
  }));

beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') },
    { name: 'resnet', from: 'resnet-tiny', config: configOf('resnet-tiny', 'resnet') },
    {
      name: 'resnet_queue',
      from: 'resnet-tiny',
      config: configOf('resnet-tiny', 'resnet_queue', (t) =>
        t.replace(
          /dynamic_batching \{[\s\S]*?\n\}/,
          `dynamic_batching {
  preferred_batch_size: [ 32 ]
  max_queue_delay_microseconds: 3000000
  default_queue_policy { max_queue_size: 2 }
}`,
        ),
      ),
    },
    {
      // Batches of 4 with a long delay: 12 concurrent requests form 3 batches however slowly
      // their (1 MB JSON) bodies are parsed on a loaded machine; 5 ms would be a race.
      name: 'resnet_batch',
      from: 'resnet-tiny',
      config: configOf('resnet-tiny', 'resnet_batch', (t) =>
        t.replace(
          /dynamic_batching \{[\s\S]*?\n\}/,
          `dynamic_batching {
  preferred_batch_size: [ 4 ]
  max_queue_delay_microseconds: 10000000
}`,
        ),
      ),
    },
    {
      name: 'resnet_timeout',
      from: 'resnet-tiny',
      config: configOf('resnet-tiny', 'resnet_timeout', (t) =>
        t.replace(
          /dynamic_batching \{[\s\S]*?\n\}/,
          `dynamic_batching {
  preferred_batch_size: [ 32 ]
  max_queue_delay_microseconds: 3000000
  default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 100000 }
}`,
        ),
      ),
    },
  ]);
  server = await startTestServer(repository);
}, 120_000);
afterAll(async () => server?.stop());

describe('KServe v2 HTTP', () => {
  it('answers health and server metadata', async () => {
    expect((await fetch(`${server.http}/v2/health/live`)).status).toBe(200);
    const ready = await fetch(`${server.http}/v2/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toBe('');
    const metadata = await (await fetch(`${server.http}/v2`)).json();
    expect(metadata.extensions).toEqual(expect.arrayContaining(['statistics', 'binary_tensor_data', 'model_repository', 'classification']));
  });

  it('serves model metadata and config as Triton prints them', async () => {
    const metadata = await (await fetch(`${server.http}/v2/models/resnet`)).json();
    expect(metadata).toEqual({
      name: 'resnet',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 3, 224, 224] }],
      outputs: [{ name: 'logits', datatype: 'FP32', shape: [-1, 1000] }],
      // KServe's optional metadata parameters: the precision variant serving and its file.
      parameters: { precision: 'fp32', model_file: 'model.onnx' },
    });
    const config = await (await fetch(`${server.http}/v2/models/resnet/config`)).json();
    expect(config).toMatchObject({ name: 'resnet', max_batch_size: 32, dynamic_batching: { preferred_batch_size: [8, 16, 32], max_queue_delay_microseconds: 5000 } });
    expect((await fetch(`${server.http}/v2/models/resnet/versions/1/ready`)).status).toBe(200);
  });

  it('runs JSON inference on BERT and echoes the request id', async () => {
    const response = await post('/v2/models/bert/infer', {
      id: 'req-7',
      inputs: bertInputs([
        [101, 7592, 2088, 102],
        [101, 2023, 2003, 102],
      ]),
      outputs: [{ name: 'sentence_embedding' }],
    });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toMatchObject({ model_name: 'bert', model_version: '1', id: 'req-7' });
    expect(body.outputs[0]).toMatchObject({ name: 'sentence_embedding', datatype: 'FP32', shape: [2, 32] });
    const row = body.outputs[0].data.slice(0, 32) as number[];
    expect(Math.hypot(...row)).toBeCloseTo(1, 4);
  });

  it('runs binary-tensor inference on ResNet as tritonclient sends it (no Content-Type, gzip)', async () => {
    const pixels = Float32Array.from(image(2));
    const header = Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'input', shape: [2, 3, 224, 224], datatype: 'FP32', parameters: { binary_data_size: pixels.byteLength } }],
        outputs: [
          { name: 'logits', parameters: { binary_data: true } },
          { name: 'logits', parameters: { classification: 3 } },
        ].slice(0, 1),
      }),
    );
    const body = gzipSync(Buffer.concat([header, Buffer.from(pixels.buffer)]));
    const response = await post('/v2/models/resnet/infer', body, { 'Inference-Header-Content-Length': String(header.length), 'Content-Encoding': 'gzip' });
    expect(response.status).toBe(200);
    const raw = Buffer.from(await response.arrayBuffer());
    const jsonLength = Number(response.headers.get('inference-header-content-length'));
    const json = JSON.parse(raw.subarray(0, jsonLength).toString());
    expect(json.outputs[0]).toMatchObject({ name: 'logits', shape: [2, 1000], parameters: { binary_data_size: 8000 } });
    const logits = new Float32Array(raw.buffer.slice(raw.byteOffset + jsonLength, raw.byteOffset + jsonLength + 8000));
    expect(logits.every(Number.isFinite)).toBe(true);
  });

  it('returns top-K classes with labels (classification extension)', async () => {
    const body = await (
      await post('/v2/models/resnet/infer', {
        inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: image(1) }],
        outputs: [{ name: 'logits', parameters: { classification: 3 } }],
      })
    ).json();
    expect(body.outputs[0]).toMatchObject({ name: 'logits', datatype: 'BYTES', shape: [1, 3] });
    expect(body.outputs[0].data[0]).toMatch(/^-?[\d.e-]+:\d+:.+$/);
  });

  it('batches concurrent requests: fewer executions than inferences', async () => {
    const before = (await (await fetch(`${server.http}/v2/models/resnet_batch/stats`)).json()).model_stats[0];
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        post('/v2/models/resnet_batch/infer', {
          inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: image(1, i) }],
        }).then((r) => expect(r.status).toBe(200)),
      ),
    );
    const after = (await (await fetch(`${server.http}/v2/models/resnet_batch/stats`)).json()).model_stats[0];
    const inferences = after.inference_count - before.inference_count;
    const executions = after.execution_count - before.execution_count;
    expect(inferences).toBe(12);
    expect(executions).toBeLessThanOrEqual(3);
    expect(after.inference_stats.success.count - before.inference_stats.success.count).toBe(12);
    expect(after.batch_stats.some((b: { batch_size: number }) => b.batch_size > 1)).toBe(true);
  });

  it('rejects at once when the queue is full (503) and keeps serving', async () => {
    const send = () => post('/v2/models/resnet_queue/infer', { inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: image(1) }] });
    const waiting = [send(), send()];
    // Both wait out the 3 s batching delay in the queue, which holds 2: the next one must be refused.
    const queued = () =>
      server.manager
        .servedModels()
        .find((m) => m.name === 'resnet_queue')
        ?.pendingRequests?.() ?? 0;
    await vi.waitFor(() => expect(queued()).toBe(2), { timeout: 15_000, interval: 5 });
    const rejected = await send();
    expect(rejected.status).toBe(503);
    expect((await rejected.json()).error).toMatch(/Exceeds maximum queue size/);
    expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([200, 200]);
  });

  it('times a queued request out with 503', async () => {
    const started = Date.now();
    const response = await post('/v2/models/resnet_timeout/infer', { inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: image(1) }] });
    expect(response.status).toBe(503);
    expect((await response.json()).error).toMatch(/Request timeout expired/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it.each([
    ['unknown model', '/v2/models/nope/infer', { inputs: [] }, 400, /unknown model: 'nope'/],
    ['unknown version', '/v2/models/resnet/versions/9/infer', { inputs: [] }, 404, /version 9/],
    ['missing input', '/v2/models/bert/infer', { inputs: bertInputs([[101, 102]]).slice(0, 2) }, 400, /missing: token_type_ids/],
    ['extra input', '/v2/models/bert/infer', { inputs: [...bertInputs([[101, 102]]), { name: 'x', datatype: 'INT64', shape: [1, 1], data: [1] }] }, 400, /unexpected inference input 'x'/],
    ['wrong datatype', '/v2/models/resnet/infer', { inputs: [{ name: 'input', datatype: 'FP64', shape: [1, 3, 224, 224], data: image(1) }] }, 400, /FP64/],
    ['wrong shape', '/v2/models/resnet/infer', { inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 10, 10], data: image(1).slice(0, 300) }] }, 400, /shape/],
    ['element count not matching the shape', '/v2/models/resnet/infer', { inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: [1, 2, 3] }] }, 400, /./],
    ['malformed JSON', '/v2/models/resnet/infer', '{"inputs": [', 400, /./],
  ])('rejects %s with a clear error', async (_, path, body, status, message) => {
    const response = await post(path, body);
    expect(response.status).toBe(status);
    expect((await response.json()).error).toMatch(message);
  });

  it('rejects a header length past the body, and a truncated binary payload', async () => {
    const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', parameters: { binary_data_size: 602112 } }] }));
    const past = await post('/v2/models/resnet/infer', header, { 'Inference-Header-Content-Length': String(header.length + 10) });
    expect(past.status).toBe(400);
    const truncated = await post('/v2/models/resnet/infer', Buffer.concat([header, Buffer.alloc(1000)]), { 'Inference-Header-Content-Length': String(header.length) });
    expect(truncated.status).toBe(400);
    expect((await truncated.json()).error).toBeTruthy();
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(200);
  });

  it('refuses load/unload in the default control mode', async () => {
    const response = await post('/v2/repository/models/resnet/unload', '');
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect((await fetch(`${server.http}/v2/models/resnet/ready`)).status).toBe(200);
  });

  it('lists the repository index with states', async () => {
    const index = await (await post('/v2/repository/index', {})).json();
    expect(index).toEqual(expect.arrayContaining([{ name: 'bert', version: '1', state: 'READY', reason: '', precision: 'fp32' }]));
  });
});
