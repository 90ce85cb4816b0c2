// The TypeScript backend against the real server: model.ts / model.js files from
// test/fixtures/typescript-models in a temporary repository, called through KServe HTTP (JSON and
// binary tensors) and gRPC (ModelInfer, ModelStreamInfer for a decoupled model). Concurrent
// requests run batched; a model that throws, answers one request with an error, hangs past its
// timeout or exits its worker fails only its own requests; BLS calls reach bert-tiny through its
// batcher and stream from a decoupled model; a client that goes away cancels the model's calls;
// models reload and unload like any other.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addModel, configOf, loadModel, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'typescript-models');
const PROTOS = join(import.meta.dirname, '..', '..', 'protos');
type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;
type Reply = Record<string, unknown>;

/** A TypeScript model: its config and the fixture file copied in as version 1's model file. */
async function addScriptModel(root: string, name: string, fixture: string, config: string): Promise<void> {
  const dir = join(root, name);
  await mkdir(join(dir, '1'), { recursive: true });
  await writeFile(join(dir, 'config.pbtxt'), `name: "${name}"\n${config}`);
  await copyFile(join(FIXTURES, fixture), join(dir, '1', fixture.endsWith('.js') ? 'model.js' : 'model.ts'));
}

const ADD_SUB = `backend: "typescript"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: 20000 }
`;
const UPPER = `backend: "javascript"
max_batch_size: 0
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "UPPER" data_type: TYPE_STRING dims: [ -1 ] } ]
`;
const COUNTER = `backend: "typescript"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "COUNT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;
const FAULTY = `backend: "typescript"
max_batch_size: 0
input [ { name: "MODE" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "ECHO" data_type: TYPE_STRING dims: [ 1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
parameters { key: "execute_timeout_secs" value { string_value: "1" } }
`;
const EMBED = `backend: "typescript"
max_batch_size: 0
input [ { name: "TOKENS" data_type: TYPE_INT64 dims: [ -1 ] } ]
output [ { name: "EMBEDDING" data_type: TYPE_FP32 dims: [ 32 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
parameters { key: "encoder" value { string_value: "bert" } }
`;
const RELAY = `backend: "typescript"
max_batch_size: 0
input [ { name: "MODE" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "ECHO" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters { key: "target" value { string_value: "waiter" } }
`;
const WAITER = `backend: "typescript"
max_batch_size: 0
input [ { name: "MODE" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "ECHO" data_type: TYPE_STRING dims: [ 1 ] } ]
`;
const COUNTER_SUM = `backend: "typescript"
max_batch_size: 0
input [ { name: "COUNT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 2 ] } ]
parameters { key: "target" value { string_value: "counter" } }
`;

let server: TestServer;
let repository: string;
let inference: Client;

beforeAll(async () => {
  repository = await makeRepository([{ name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') }]);
  await addScriptModel(repository, 'add_sub', 'add-sub.ts', ADD_SUB);
  await addScriptModel(repository, 'upper', 'upper.js', UPPER);
  await addScriptModel(repository, 'counter', 'counter.ts', COUNTER);
  await addScriptModel(repository, 'faulty', 'faulty.ts', FAULTY);
  await addScriptModel(repository, 'embed', 'embed.ts', EMBED);
  await addScriptModel(repository, 'relay', 'relay.ts', RELAY);
  await addScriptModel(repository, 'waiter', 'waiter.ts', WAITER);
  await addScriptModel(repository, 'counter_sum', 'counter-sum.ts', COUNTER_SUM);
  server = await startTestServer(repository, ['--model-control-mode', 'explicit', '--load-model', '*']);
  const definition = loadSync('grpc_service.proto', { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTOS] });
  const root = grpc.loadPackageDefinition(definition) as unknown as { inference: { GRPCInferenceService: new (...a: unknown[]) => Client } };
  inference = new root.inference.GRPCInferenceService(server.grpcAddress, grpc.credentials.createInsecure());
}, 120_000);

afterAll(async () => {
  inference?.close();
  await server?.stop();
});

async function infer(model: string, body: object, signal?: AbortSignal): Promise<{ status: number; json: Reply }> {
  const response = await fetch(`${server.http}/v2/models/${model}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  return { status: response.status, json: (await response.json()) as Reply };
}

const mode = (value: string) => ({ inputs: [{ name: 'MODE', datatype: 'BYTES', shape: [1], data: [value] }] });

async function statistics(model: string): Promise<Reply> {
  const response = await fetch(`${server.http}/v2/models/${model}/stats`);
  return ((await response.json()) as { model_stats: Reply[] }).model_stats[0]!;
}

function unary(rpc: string, request: object): Promise<Reply> {
  return new Promise((resolve, reject) => {
    inference[rpc]!(request, (error: grpc.ServiceError | null, reply: Reply) => (error ? reject(error) : resolve(reply)));
  });
}

/** Every reply of one ModelStreamInfer call carrying `requests`, once the server ends it. */
async function stream(requests: readonly object[]): Promise<Reply[]> {
  const call = (inference['ModelStreamInfer'] as () => grpc.ClientDuplexStream<object, Reply>)();
  const replies: Reply[] = [];
  const done = new Promise<void>((resolve, reject) => {
    call.on('data', (reply: Reply) => replies.push(reply));
    call.on('end', resolve);
    call.on('error', reject);
  });
  for (const request of requests) call.write(request);
  call.end();
  await done;
  return replies;
}

const int32s = (raw: Uint8Array) => Array.from(new Int32Array(new Uint8Array(raw).buffer));

describe('backend "typescript" (real server)', () => {
  it('runs add_sub over KServe HTTP JSON and gRPC ModelInfer', async () => {
    const body = {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], data: [0.5, 0.5, 1, 8] },
      ],
    };
    const { status, json } = await infer('add_sub', body);
    expect(status).toBe(200);
    expect(json['outputs']).toEqual([
      { name: 'OUTPUT0', datatype: 'FP32', shape: [1, 4], data: [1.5, 2.5, 4, 12] },
      { name: 'OUTPUT1', datatype: 'FP32', shape: [1, 4], data: [0.5, 1.5, 2, -4] },
    ]);
    const reply = await unary('ModelInfer', {
      model_name: 'add_sub',
      id: 'g1',
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } },
        { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 1, 1, 1] } },
      ],
    });
    const raw = reply['raw_output_contents'] as Uint8Array[];
    expect(Array.from(new Float32Array(new Uint8Array(raw[0]!).buffer))).toEqual([2, 3, 4, 5]);
    expect(Array.from(new Float32Array(new Uint8Array(raw[1]!).buffer))).toEqual([0, 1, 2, 3]);
    const config = (await (await fetch(`${server.http}/v2/models/add_sub/config`)).json()) as Reply;
    expect(config).toMatchObject({ backend: 'typescript', default_model_filename: 'model.ts' });
  });

  it('batches concurrent requests into fewer executions', async () => {
    const before = await statistics('add_sub');
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        infer('add_sub', {
          inputs: [
            { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: [i, i, i, i] },
            { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], data: [1, 1, 1, 1] },
          ],
        }),
      ),
    );
    answers.forEach(({ json }, i) => expect((json['outputs'] as Reply[])[0]!['data']).toEqual([i + 1, i + 1, i + 1, i + 1]));
    const after = await statistics('add_sub');
    const inferences = (after['inference_count'] as number) - (before['inference_count'] as number);
    const executions = (after['execution_count'] as number) - (before['execution_count'] as number);
    expect(inferences).toBe(8);
    expect(executions).toBeLessThan(inferences);
  });

  it('upper-cases BYTES in a model.js that imports the server’s packages, in JSON and binary tensors', async () => {
    const { json } = await infer('upper', { inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [2], data: ['hello', 'wörld'] }] });
    expect(json['outputs']).toEqual([{ name: 'UPPER', datatype: 'BYTES', shape: [2], data: ['HELLO', 'WÖRLD'] }]);
    // Binary: each BYTES element is a 4-byte little-endian length and its bytes.
    const element = (s: string) => {
      const bytes = Buffer.from(s, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32LE(bytes.length);
      return Buffer.concat([length, bytes]);
    };
    const tensor = Buffer.concat([element('abc'), element('xyz')]);
    const header = Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [2], parameters: { binary_data_size: tensor.length } }],
        outputs: [{ name: 'UPPER', parameters: { binary_data: true } }],
      }),
    );
    const response = await fetch(`${server.http}/v2/models/upper/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) },
      body: Buffer.concat([header, tensor]),
    });
    expect(response.status).toBe(200);
    const body = Buffer.from(await response.arrayBuffer());
    const jsonLength = Number(response.headers.get('inference-header-content-length'));
    expect(body.subarray(jsonLength)).toEqual(Buffer.concat([element('ABC'), element('XYZ')]));
  });

  it('streams a decoupled model’s responses over ModelStreamInfer, and refuses ModelInfer for it', async () => {
    const replies = await stream([
      { model_name: 'counter', id: 'three', inputs: [{ name: 'COUNT', datatype: 'INT32', shape: [1], contents: { int_contents: [3] } }] },
      {
        model_name: 'counter',
        id: 'none',
        inputs: [{ name: 'COUNT', datatype: 'INT32', shape: [1], contents: { int_contents: [0] } }],
        parameters: { triton_enable_empty_final_response: { bool_param: true } },
      },
    ]);
    const responses = replies.map((r) => r['infer_response'] as Reply);
    const three = responses.filter((r) => r['id'] === 'three');
    expect(three.map((r) => int32s((r['raw_output_contents'] as Uint8Array[])[0]!)[0])).toEqual([0, 1, 2]);
    expect(three.map((r) => (r['parameters'] as Reply)['triton_final_response'])).toEqual([
      { bool_param: false, parameter_choice: 'bool_param' },
      { bool_param: false, parameter_choice: 'bool_param' },
      { bool_param: false, parameter_choice: 'bool_param' },
    ]);
    const none = responses.filter((r) => r['id'] === 'none');
    expect(none).toHaveLength(1);
    expect(none[0]!['outputs']).toEqual([]);
    expect((none[0]!['parameters'] as Reply)['triton_final_response']).toMatchObject({ bool_param: true });
    await expect(unary('ModelInfer', { model_name: 'counter', inputs: [{ name: 'COUNT', datatype: 'INT32', shape: [1], contents: { int_contents: [1] } }] })).rejects.toMatchObject({
      code: grpc.status.UNIMPLEMENTED,
    });
    const refused = await stream([{ model_name: 'counter', inputs: [{ name: 'COUNT', datatype: 'INT32', shape: [1], contents: { int_contents: [-1] } }] }]);
    expect(refused.map((r) => r['error_message'])).toEqual([expect.stringMatching(/COUNT must be >= 0/)]);
  });

  it('fails only the requests of a model that errs, throws, hangs or exits; the others succeed', async () => {
    const [ok, error, thrown] = await Promise.all([infer('faulty', mode('ok')), infer('faulty', mode('error')), infer('faulty', mode('throw'))]);
    expect(ok).toMatchObject({ status: 200, json: { outputs: [{ name: 'ECHO', data: ['ok'] }] } });
    expect(error).toMatchObject({ status: 400, json: { error: 'refused on purpose' } });
    expect(thrown.status).toBe(500);
    expect(thrown.json['error']).toMatch(/thrown on purpose/);

    // A hang holds one instance until the timeout; the other keeps serving meanwhile.
    const hang = infer('faulty', mode('hang'));
    await vi.waitFor(async () => expect((await statistics('faulty'))['execution_count']).toBeGreaterThan(0));
    const during = await infer('faulty', mode('ok'));
    expect(during.status).toBe(200);
    const hung = await hang;
    expect(hung.status).toBe(504);
    expect(hung.json['error']).toMatch(/execute_timeout_secs \(1 s\)/);

    const exited = await infer('faulty', mode('exit'));
    expect(exited.status).toBe(503);
    expect(exited.json['error']).toMatch(/exited with code 3/);
    // Both instances come back (restart with backoff) and serve again.
    await vi.waitFor(async () => expect((await infer('faulty', mode('ok'))).status).toBe(200), { timeout: 30_000, interval: 100 });
    expect(server.logs.some((line) => /faulty:1 instance \d restarted/.test(line))).toBe(true);
  }, 60_000);

  it('calls bert-tiny from inside execute() (BLS), equal to calling it directly', async () => {
    const tokens = [101, 7592, 2088, 102];
    const { json } = await infer('embed', { inputs: [{ name: 'TOKENS', datatype: 'INT64', shape: [4], data: tokens }] });
    const direct = await infer('bert', {
      inputs: [
        { name: 'input_ids', datatype: 'INT64', shape: [1, 4], data: tokens },
        { name: 'attention_mask', datatype: 'INT64', shape: [1, 4], data: [1, 1, 1, 1] },
        { name: 'token_type_ids', datatype: 'INT64', shape: [1, 4], data: [0, 0, 0, 0] },
      ],
      outputs: [{ name: 'sentence_embedding' }],
    });
    const embedding = (json['outputs'] as Reply[])[0]!;
    expect(embedding).toMatchObject({ name: 'EMBEDDING', datatype: 'FP32', shape: [32] });
    expect(embedding['data']).toEqual((direct.json['outputs'] as Reply[])[0]!['data']);
  });

  it('streams from a decoupled model inside execute() (BLS inferStream)', async () => {
    const { json } = await infer('counter_sum', { inputs: [{ name: 'COUNT', datatype: 'INT32', shape: [1], data: [5] }] });
    expect((json['outputs'] as Reply[])[0]!['data']).toEqual([0 + 1 + 2 + 3 + 4, 5]);
  });

  it('cancels the model’s BLS calls when its client goes away', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'conveyor-ts-')), 'running');
    const client = new AbortController();
    const relayed = infer('relay', { ...mode('wait'), parameters: { marker } }, client.signal).catch((error: unknown) => error);
    await vi.waitFor(() => expect(existsSync(marker)).toBe(true), { timeout: 10_000, interval: 20 });
    client.abort();
    await relayed;
    // The waiter saw its request cancelled (its one request failed), so its instance is free again.
    await vi.waitFor(async () => expect(((await statistics('waiter'))['inference_stats'] as Record<string, Reply>)['fail']!['count']).toBe(1), { timeout: 10_000, interval: 50 });
  });

  it('reloads with a new model file and unloads', async () => {
    await addModel(repository, { name: 'spare', from: 'bert-tiny', config: configOf('bert-tiny', 'spare') });
    await copyFile(join(FIXTURES, 'upper.js'), join(repository, 'upper', '1', 'model.js'));
    expect(await loadModel(server, 'upper')).toEqual({ status: 200, error: '' });
    expect((await infer('upper', { inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [1], data: ['again'] }] })).json['outputs']).toMatchObject([{ data: ['AGAIN'] }]);
    const unload = await fetch(`${server.http}/v2/repository/models/upper/unload`, { method: 'POST' });
    expect(unload.status).toBe(200);
    expect((await fetch(`${server.http}/v2/models/upper/ready`)).status).toBe(400);
    expect(await loadModel(server, 'upper')).toEqual({ status: 200, error: '' });
    expect((await fetch(`${server.http}/v2/models/upper/ready`)).status).toBe(200);
  });

  it('refuses a config without declared tensors, and a version without a model file', async () => {
    await addScriptModel(repository, 'bare', 'upper.js', 'backend: "typescript"\nmax_batch_size: 0\n');
    expect((await loadModel(server, 'bare')).error).toMatch(/must declare its inputs in the config/);
    await mkdir(join(repository, 'empty', '1'), { recursive: true });
    await writeFile(join(repository, 'empty', 'config.pbtxt'), `name: "empty"\n${UPPER}`);
    expect((await loadModel(server, 'empty')).error).toMatch(/no model file: expected model.ts or model.js or model.mjs/);
  });
});
