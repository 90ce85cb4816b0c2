// The KServe v2 routes against the real server composition (repository → model manager →
// service) over the built resnet-tiny and bert-tiny models, driven with fastify inject() the
// way tritonclient drives Triton: no Content-Type, binary tensors, gzip.
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../../../models/default-repository.js';
import { parseServerOptions } from '../../../../src/config/server-options.js';
import { startServer, type RunningServer } from '../../../../src/main.js';
import { createHttpApp } from '../../../../src/main.js';

const IMAGE = 3 * 224 * 224;

async function repository(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'conveyor-http-'));
  for (const [from, name] of [
    ['resnet-tiny', 'resnet'],
    ['bert-tiny', 'bert'],
  ] as const) {
    await cp(join(DEFAULT_REPOSITORY, from), join(root, name), { recursive: true });
    const config = join(root, name, 'config.pbtxt');
    await writeFile(config, (await readFile(config, 'utf8')).replace(`name: "${from}"`, `name: "${name}"`));
  }
  return root;
}

function images(batch: number): Float32Array {
  const data = new Float32Array(batch * IMAGE);
  for (let i = 0; i < data.length; i++) data[i] = Math.sin(i * 0.001);
  return data;
}

const bytesOf = (data: Float32Array) => Buffer.from(data.buffer, data.byteOffset, data.byteLength);

/** tritonclient's body: JSON header + binary inputs, with the header length. */
function binaryBody(header: object, ...binary: Buffer[]): { payload: Buffer; headers: Record<string, string> } {
  const json = Buffer.from(JSON.stringify(header));
  return { payload: Buffer.concat([json, ...binary]), headers: { 'inference-header-content-length': String(json.byteLength) } };
}

function imageRequest(batch: number, extra: object = {}): { payload: Buffer; headers: Record<string, string> } {
  const header = { inputs: [{ name: 'input', datatype: 'FP32', shape: [batch, 3, 224, 224], parameters: { binary_data_size: batch * IMAGE * 4 } }], ...extra };
  return binaryBody(header, bytesOf(images(batch)));
}

/** A binary response split into its JSON header and binary part. */
function splitResponse(response: LightMyRequestResponse): { json: Record<string, unknown>; binary: Buffer } {
  const length = Number(response.headers['inference-header-content-length']);
  return { json: JSON.parse(response.rawPayload.toString('utf8', 0, length)), binary: response.rawPayload.subarray(length) };
}

const floatsOf = (bytes: Buffer) => new Float32Array(new Uint8Array(bytes).buffer);

describe('KServe v2 HTTP routes on the real service', () => {
  let server: RunningServer;
  let app: FastifyInstance;

  beforeAll(async () => {
    const options = parseServerOptions([
      '--model-repository',
      await repository(),
      '--host',
      '127.0.0.1',
      '--http-port',
      '0',
      '--grpc-port',
      '0',
      '--metrics-port',
      '0',
      '--model-control-mode',
      'explicit',
      '--load-model',
      '*',
    ]);
    server = await startServer(options, { log: () => {} });
    app = createHttpApp(server.service, { bodyLimit: 16 * 1024 * 1024 });
  });
  afterAll(async () => {
    await app?.close();
    await server?.stop();
  });

  it('answers health with empty 200 bodies and lists the extensions perf_analyzer looks for', async () => {
    for (const url of ['/v2/health/live', '/v2/health/ready']) {
      const response = await app.inject({ method: 'GET', url });
      expect([response.statusCode, response.body]).toEqual([200, '']);
    }
    const metadata = (await app.inject({ method: 'GET', url: '/v2' })).json();
    expect(metadata.name).toBe('conveyor');
    expect(metadata.extensions).toEqual(expect.arrayContaining(['binary_tensor_data', 'statistics', 'model_repository', 'classification']));
  });

  it('describes a model with and without a version, and its config as Triton prints it', async () => {
    const metadata = (await app.inject({ method: 'GET', url: '/v2/models/resnet' })).json();
    expect(metadata).toEqual({
      name: 'resnet',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 3, 224, 224] }],
      outputs: [{ name: 'logits', datatype: 'FP32', shape: [-1, 1000] }],
      // The variant serving (Triton's metadata has no field for it; KServe allows parameters).
      parameters: { precision: 'fp32', model_file: 'model.onnx' },
    });
    expect((await app.inject({ method: 'GET', url: '/v2/models/resnet/versions/1' })).json().versions).toEqual(['1']);
    const config = (await app.inject({ method: 'GET', url: '/v2/models/resnet/config' })).json();
    expect(config).toMatchObject({ name: 'resnet', max_batch_size: 32, input: [{ name: 'input', data_type: 'TYPE_FP32', dims: [3, 224, 224] }] });
  });

  it('answers readiness with 200, and unknown models with 400 {"error"}', async () => {
    expect((await app.inject({ method: 'GET', url: '/v2/models/resnet/ready' })).statusCode).toBe(200);
    const notReady = await app.inject({ method: 'GET', url: '/v2/models/nope/ready' });
    expect(notReady.statusCode).toBe(400);
    expect(notReady.json()).toEqual({ error: "model 'nope' is not ready" });
    const unknown = await app.inject({ method: 'GET', url: '/v2/models/nope' });
    expect(unknown.statusCode).toBe(400);
    expect(typeof unknown.json().error).toBe('string');
  });

  it('infers a binary batch the way tritonclient sends it (no Content-Type), answering binary', async () => {
    const { payload, headers } = imageRequest(2, { id: 'r-1', parameters: { binary_data_output: true } });
    const response = await app.inject({ method: 'POST', url: '/v2/models/resnet/infer', payload, headers });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/octet-stream');
    const { json, binary } = splitResponse(response);
    expect(json).toEqual({
      id: 'r-1',
      model_name: 'resnet',
      model_version: '1',
      outputs: [{ name: 'logits', datatype: 'FP32', shape: [2, 1000], parameters: { binary_data_size: 8000 } }],
    });
    expect(binary.byteLength).toBe(8000);
    expect(floatsOf(binary).every(Number.isFinite)).toBe(true);
  });

  it('gives the same logits as JSON output, and for gzip bodies both ways', async () => {
    const { payload, headers } = imageRequest(1, { outputs: [{ name: 'logits', parameters: { binary_data: true } }] });
    const binary = splitResponse(await app.inject({ method: 'POST', url: '/v2/models/resnet/infer', payload, headers })).binary;
    const asJson = await app.inject({ method: 'POST', url: '/v2/models/resnet/infer', payload, headers: { ...headers, 'content-type': 'application/json' } });
    const gz = imageRequest(1, { outputs: [{ name: 'logits', parameters: { binary_data: false } }] });
    const zipped = await app.inject({
      method: 'POST',
      url: '/v2/models/resnet/infer',
      payload: gzipSync(gz.payload),
      headers: { ...gz.headers, 'content-encoding': 'gzip', 'accept-encoding': 'gzip' },
    });
    expect(asJson.statusCode).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers['content-type']).toBe('application/json');
    const data = JSON.parse(gunzipSync(zipped.rawPayload).toString()).outputs[0].data as number[];
    expect(new Float32Array(data)).toEqual(floatsOf(binary));
  });

  it('serves a raw binary request (header length 0) as batch 1 with binary outputs', async () => {
    const response = await app.inject({ method: 'POST', url: '/v2/models/resnet/infer', payload: bytesOf(images(1)), headers: { 'inference-header-content-length': '0' } });
    expect(response.statusCode).toBe(200);
    expect(splitResponse(response).json.outputs).toEqual([{ name: 'logits', datatype: 'FP32', shape: [1, 1000], parameters: { binary_data_size: 4000 } }]);
  });

  it('returns top-K classes with labels for classification', async () => {
    const { payload, headers } = imageRequest(1, { outputs: [{ name: 'logits', parameters: { classification: 3, binary_data: false } }] });
    const output = (await app.inject({ method: 'POST', url: '/v2/models/resnet/infer', payload, headers })).json().outputs[0];
    expect(output).toMatchObject({ name: 'logits', datatype: 'BYTES', shape: [1, 3] });
    for (const entry of output.data as string[]) expect(entry).toMatch(/^-?[\d.e+-]+:\d+:[a-z ]+$/);
  });

  it('infers JSON INT64 inputs on an encoder', async () => {
    const ids = [[101, 2023, 102]];
    const header = {
      inputs: [
        { name: 'input_ids', datatype: 'INT64', shape: [1, 3], data: ids },
        { name: 'attention_mask', datatype: 'INT64', shape: [1, 3], data: [[1, 1, 1]] },
        { name: 'token_type_ids', datatype: 'INT64', shape: [1, 3], data: [0, 0, 0] },
      ],
      outputs: [{ name: 'sentence_embedding' }],
    };
    const response = await app.inject({ method: 'POST', url: '/v2/models/bert/infer', payload: JSON.stringify(header) });
    expect(response.statusCode).toBe(200);
    expect(response.json().outputs).toEqual([expect.objectContaining({ name: 'sentence_embedding', datatype: 'FP32', shape: [1, 32] })]);
  });

  it('returns every failure as {"error"} with the catalog status', async () => {
    const malformed = await app.inject({ method: 'POST', url: '/v2/models/resnet/infer', payload: '{"inputs": [' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error).toMatch(/^failed to parse the request JSON: /);
    const { payload, headers } = imageRequest(1);
    const truncated = await app.inject({ method: 'POST', url: '/v2/models/resnet/infer', payload: payload.subarray(0, payload.byteLength - 4), headers });
    expect(truncated.statusCode).toBe(400);
    expect(truncated.json().error).toBe(`input 'input': binary_data_size ${IMAGE * 4} exceeds the ${IMAGE * 4 - 4} bytes of binary data left`);
    const wrongShape = binaryBody({ inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }] });
    const rejected = await app.inject({ method: 'POST', url: '/v2/models/resnet/infer', ...wrongShape });
    expect(rejected.statusCode).toBe(400);
    expect(typeof rejected.json().error).toBe('string');
    const tooLarge = await createHttpApp(server.service, { bodyLimit: 1000 }).inject({ method: 'POST', url: '/v2/models/resnet/infer', payload, headers });
    expect(tooLarge.statusCode).toBe(413);
    expect(typeof tooLarge.json().error).toBe('string');
  });

  it('reports statistics for all models, one model and one version', async () => {
    const all = (await app.inject({ method: 'GET', url: '/v2/models/stats' })).json();
    expect(all.model_stats.map((s: { name: string }) => s.name)).toEqual(['bert', 'resnet']);
    const one = (await app.inject({ method: 'GET', url: '/v2/models/resnet/versions/1/stats' })).json().model_stats;
    expect(one).toHaveLength(1);
    expect(one[0]).toMatchObject({ name: 'resnet', version: '1', response_stats: {} });
    expect(one[0].inference_count).toBeGreaterThan(0);
    expect(one[0].inference_stats.success.count).toBeGreaterThan(0);
  });

  it('indexes the repository and unloads and loads models', async () => {
    const index = (await app.inject({ method: 'POST', url: '/v2/repository/index', payload: '{"ready": true}' })).json();
    expect(index).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'resnet', state: 'READY' })]));
    const unload = await app.inject({ method: 'POST', url: '/v2/repository/models/bert/unload', payload: '{"parameters": {"unload_dependents": false}}' });
    expect([unload.statusCode, unload.body]).toEqual([200, '']);
    expect((await app.inject({ method: 'GET', url: '/v2/models/bert/ready' })).statusCode).toBe(400);
    const load = await app.inject({ method: 'POST', url: '/v2/repository/models/bert/load' });
    expect([load.statusCode, load.body]).toEqual([200, '']);
    expect((await app.inject({ method: 'GET', url: '/v2/models/bert/ready' })).statusCode).toBe(200);
    const badLoad = await app.inject({ method: 'POST', url: '/v2/repository/models/bert/load', payload: '{"parameters": {"file:1/model.onnx": "AAAA"}}' });
    expect(badLoad.statusCode).toBe(400);
    expect(badLoad.json()).toEqual({ error: "the load parameters 'file:...' need the 'config' parameter too" });
  });
});
