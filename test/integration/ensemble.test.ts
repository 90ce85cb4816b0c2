// Triton ensembles against the real server: bert-tiny chained into tiny ONNX models built by the
// test, a graph with two parallel branches and an ensemble nested in another, through KServe HTTP
// (JSON and binary tensors), gRPC ModelInfer and ModelStreamInfer, statistics, metrics and the
// repository API. Every answer is compared with calling the composing models one by one.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addEnsemble, addRowModel } from '../support/ensemble-models.js';
import { configOf, loadModel, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const PROTOS = join(import.meta.dirname, '..', '..', 'protos');
const WIDTH = 32; // bert-tiny's hidden size: sentence_embedding is FP32 [32]
const BERT_INPUTS = ['input_ids', 'attention_mask', 'token_type_ids'] as const;

const bertInputsConfig = BERT_INPUTS.map((name) => `{ name: "${name}" data_type: TYPE_INT64 dims: [ -1 ] }`).join(', ');
const bertInputMap = BERT_INPUTS.map((name) => `input_map { key: "${name}" value: "${name}" }`).join(' ');
const bertStep = (embedding: string) => `{ model_name: "bert" model_version: -1 ${bertInputMap} output_map { key: "sentence_embedding" value: "${embedding}" } }`;
const rowStep = (model: string, from: string, to: string) => `{ model_name: "${model}" model_version: -1 input_map { key: "x" value: "${from}" } output_map { key: "y" value: "${to}" } }`;
const ensembleConfig = (name: string, inputs: string, outputs: string[], steps: string[]) => `name: "${name}"
platform: "ensemble"
max_batch_size: 8
input [ ${inputs} ]
output [ ${outputs.map((o) => `{ name: "${o}" data_type: TYPE_FP32 dims: [ ${WIDTH} ] }`).join(', ')} ]
ensemble_scheduling { step [ ${steps.join(', ')} ] }
`;

/** Writes the composing models and the three ensembles into `root`. */
async function addPipelines(root: string): Promise<void> {
  await addRowModel(root, 'l2norm', 'l2norm', WIDTH);
  await addRowModel(root, 'double', 'double', WIDTH);
  await addRowModel(root, 'increment', 'increment', WIDTH);
  await addEnsemble(root, 'embed_norm', ensembleConfig('embed_norm', bertInputsConfig, ['embedding'], [bertStep('raw'), rowStep('l2norm', 'raw', 'embedding')]));
  await addEnsemble(
    root,
    'branches',
    ensembleConfig('branches', bertInputsConfig, ['doubled', 'shifted'], [bertStep('raw'), rowStep('double', 'raw', 'doubled'), rowStep('increment', 'raw', 'shifted')]),
  );
  const nestedStep = `{ model_name: "embed_norm" model_version: -1 ${bertInputMap} output_map { key: "embedding" value: "unit" } }`;
  await addEnsemble(root, 'nested', ensembleConfig('nested', bertInputsConfig, ['twice_unit'], [nestedStep, rowStep('double', 'unit', 'twice_unit')]));
}

async function repository(): Promise<string> {
  const root = await makeRepository([{ name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') }]);
  await addPipelines(root);
  return root;
}

type Json = Record<string, unknown>;
interface JsonTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: number[];
}

const tokenRows = (rows: number, seed: number): number[][] => Array.from({ length: rows }, (_, r) => Array.from({ length: 6 }, (_, i) => 100 + ((seed * 31 + r * 7 + i * 13) % 900)));
const bertJsonInputs = (ids: number[][]) =>
  BERT_INPUTS.map((name) => ({ name, datatype: 'INT64', shape: [ids.length, ids[0]!.length], data: ids.flat().map((id) => (name === 'input_ids' ? id : name === 'attention_mask' ? 1 : 0)) }));

async function infer(server: TestServer, model: string, inputs: unknown[], outputs?: string[]): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${server.http}/v2/models/${model}/infer`, {
    method: 'POST',
    body: JSON.stringify({ inputs, ...(outputs ? { outputs: outputs.map((name) => ({ name })) } : {}) }),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

const outputOf = (body: Json, name: string): JsonTensor => (body['outputs'] as JsonTensor[]).find((o) => o.name === name)!;
const asRowInput = (tensor: JsonTensor) => ({ name: 'x', datatype: 'FP32', shape: tensor.shape, data: tensor.data });

/** bert, then `model`, called one by one over HTTP: what an ensemble chaining them must answer. */
async function byHand(server: TestServer, ids: number[][], ...models: string[]): Promise<JsonTensor> {
  let tensor = outputOf((await infer(server, 'bert', bertJsonInputs(ids), ['sentence_embedding'])).body, 'sentence_embedding');
  for (const model of models) tensor = outputOf((await infer(server, model, [asRowInput(tensor)])).body, 'y');
  return tensor;
}

function expectClose(actual: readonly number[], expected: readonly number[]): void {
  expect(actual).toHaveLength(expected.length);
  actual.forEach((v, i) => expect(v).toBeCloseTo(expected[i]!, 5));
}

async function statsOf(server: TestServer, model: string): Promise<Json> {
  const body = (await (await fetch(`${server.http}/v2/models/${model}/stats`)).json()) as { model_stats: Json[] };
  return body.model_stats[0]!;
}

type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;
function grpcClient(address: string): Client {
  const definition = loadSync(['grpc_service.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTOS] });
  const root = grpc.loadPackageDefinition(definition) as unknown as { inference: { GRPCInferenceService: new (...a: unknown[]) => Client } };
  return new root.inference.GRPCInferenceService(address, grpc.credentials.createInsecure());
}

function grpcInferRequest(model: string, ids: number[][], id: string): Json {
  const rows = ids.length;
  const width = ids[0]!.length;
  const raw = (name: string) => Buffer.from(BigInt64Array.from(ids.flat(), (v) => BigInt(name === 'input_ids' ? v : name === 'attention_mask' ? 1 : 0)).buffer);
  return {
    model_name: model,
    id,
    inputs: BERT_INPUTS.map((name) => ({ name, datatype: 'INT64', shape: [rows, width] })),
    raw_input_contents: BERT_INPUTS.map(raw),
  };
}

const floatsOf = (raw: Uint8Array): number[] => Array.from(new Float32Array(new Uint8Array(raw).buffer));

describe('ensembles (control mode none: everything loads)', () => {
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    server = await startTestServer(await repository());
    client = grpcClient(server.grpcAddress);
  });
  afterAll(async () => {
    client?.close();
    await server?.stop();
  });

  it('describes an ensemble as Triton does: metadata, config, index', async () => {
    const metadata = (await (await fetch(`${server.http}/v2/models/embed_norm`)).json()) as Json;
    expect(metadata).toMatchObject({
      name: 'embed_norm',
      platform: 'ensemble',
      inputs: BERT_INPUTS.map((name) => ({ name, datatype: 'INT64', shape: [-1, -1] })),
      outputs: [{ name: 'embedding', datatype: 'FP32', shape: [-1, WIDTH] }],
    });
    const config = (await (await fetch(`${server.http}/v2/models/embed_norm/config`)).json()) as Json;
    expect(config).toMatchObject({ platform: 'ensemble', backend: '', instance_group: [], max_batch_size: 8 });
    expect((config['ensemble_scheduling'] as { step: Json[] }).step[1]).toMatchObject({ model_name: 'l2norm', model_version: -1, input_map: { x: 'raw' }, output_map: { y: 'embedding' } });
    const index = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as Json[];
    for (const name of ['embed_norm', 'branches', 'nested', 'bert', 'l2norm']) expect(index).toContainEqual(expect.objectContaining({ name, state: 'READY' }));
    expect((await fetch(`${server.http}/v2/models/embed_norm/ready`)).status).toBe(200);
  });

  it('KServe HTTP JSON: a chain answers what its models answer one by one', async () => {
    const ids = tokenRows(3, 1);
    const { status, body } = await infer(server, 'embed_norm', bertJsonInputs(ids));
    expect(status).toBe(200);
    expect(body).toMatchObject({ model_name: 'embed_norm', model_version: '1' });
    const embedding = outputOf(body, 'embedding');
    expect(embedding).toMatchObject({ datatype: 'FP32', shape: [3, WIDTH] });
    expectClose(embedding.data, (await byHand(server, ids, 'l2norm')).data);
  });

  it('parallel branches, requested outputs only, and an ensemble nested in another', async () => {
    const ids = tokenRows(2, 2);
    const both = (await infer(server, 'branches', bertJsonInputs(ids))).body;
    expectClose(outputOf(both, 'doubled').data, (await byHand(server, ids, 'double')).data);
    expectClose(outputOf(both, 'shifted').data, (await byHand(server, ids, 'increment')).data);
    const one = (await infer(server, 'branches', bertJsonInputs(ids), ['shifted'])).body;
    expect((one['outputs'] as JsonTensor[]).map((o) => o.name)).toEqual(['shifted']);
    const nested = (await infer(server, 'nested', bertJsonInputs(ids))).body;
    expectClose(outputOf(nested, 'twice_unit').data, (await byHand(server, ids, 'l2norm', 'double')).data);
  });

  it('KServe HTTP binary tensors in and out', async () => {
    const ids = tokenRows(2, 3);
    const raw = BERT_INPUTS.map((name) => Buffer.from(BigInt64Array.from(ids.flat(), (v) => BigInt(name === 'input_ids' ? v : name === 'attention_mask' ? 1 : 0)).buffer));
    const header = Buffer.from(
      JSON.stringify({
        inputs: BERT_INPUTS.map((name, i) => ({ name, datatype: 'INT64', shape: [2, 6], parameters: { binary_data_size: raw[i]!.byteLength } })),
        outputs: [{ name: 'embedding', parameters: { binary_data: true } }],
      }),
    );
    const response = await fetch(`${server.http}/v2/models/embed_norm/infer`, {
      method: 'POST',
      body: Buffer.concat([header, ...raw]),
      headers: { 'Inference-Header-Content-Length': String(header.byteLength) },
    });
    expect(response.status).toBe(200);
    const headerLength = Number(response.headers.get('inference-header-content-length'));
    const bytes = new Uint8Array(await response.arrayBuffer());
    const json = JSON.parse(new TextDecoder().decode(bytes.subarray(0, headerLength))) as Json;
    expect((json['outputs'] as Json[])[0]).toMatchObject({ name: 'embedding', shape: [2, WIDTH], parameters: { binary_data_size: 2 * WIDTH * 4 } });
    expectClose(floatsOf(bytes.slice(headerLength)), (await byHand(server, ids, 'l2norm')).data);
  });

  it('gRPC ModelInfer and ModelStreamInfer', async () => {
    const ids = tokenRows(2, 4);
    const expected = (await byHand(server, ids, 'double')).data;
    const reply = await new Promise<Json>((resolve, reject) =>
      client['ModelInfer']!(grpcInferRequest('branches', ids, 'unary'), (error: grpc.ServiceError | null, r: Json) => (error ? reject(error) : resolve(r))),
    );
    expect(reply).toMatchObject({ model_name: 'branches', id: 'unary', outputs: [{ name: 'doubled', shape: ['2', String(WIDTH)] }, { name: 'shifted' }] });
    expectClose(floatsOf((reply['raw_output_contents'] as Uint8Array[])[0]!), expected);

    const call = client['ModelStreamInfer']!() as grpc.ClientDuplexStream<Json, Json>;
    const replies: Json[] = [];
    call.on('data', (r: Json) => replies.push(r));
    call.on('error', () => undefined); // CANCELLED when the test ends the call
    call.write(grpcInferRequest('branches', ids, 's1'));
    call.write(grpcInferRequest('embed_norm', ids, 's2'));
    await vi.waitFor(() => expect(replies).toHaveLength(2), { timeout: 20_000, interval: 10 });
    call.cancel();
    const branches = replies.find((r) => (r['infer_response'] as Json)['id'] === 's1')!;
    expect(branches['error_message']).toBe('');
    expectClose(floatsOf(((branches['infer_response'] as Json)['raw_output_contents'] as Uint8Array[])[0]!), expected);
  });

  it('concurrent ensemble requests batch inside the composing models; the ensemble has its own statistics and metrics', async () => {
    const before = await statsOf(server, 'l2norm');
    const ensembleBefore = await statsOf(server, 'embed_norm');
    const n = 12;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => infer(server, 'embed_norm', bertJsonInputs(tokenRows(1, 10 + i)))));
    for (const r of results) expect(r.status).toBe(200);
    const after = await statsOf(server, 'l2norm');
    const inferences = Number(after['inference_count']) - Number(before['inference_count']);
    const executions = Number(after['execution_count']) - Number(before['execution_count']);
    expect(inferences).toBe(n);
    expect(executions).toBeLessThan(inferences);
    const ensemble = await statsOf(server, 'embed_norm');
    expect(Number(ensemble['inference_count']) - Number(ensembleBefore['inference_count'])).toBe(n);
    const success = (s: Json) => ((s['inference_stats'] as Json)['success'] as { count: number }).count;
    expect(success(ensemble) - success(ensembleBefore)).toBe(n);
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/nv_inference_request_success\{model="embed_norm",version="1",[^}]*\} [1-9]\d*/);
    expect(metrics).toMatch(/nv_inference_count\{model="embed_norm",version="1",[^}]*\} [1-9]\d*/);
    expect(metrics).toMatch(/nv_inference_exec_count\{model="l2norm",version="1",[^}]*\} [1-9]\d*/);
  });

  it('a step that fails names itself; bad ensemble input is refused in the ensemble’s own words', async () => {
    // bert refuses token ids past its vocabulary (an embedding table index) before batching them.
    const failing = await infer(server, 'embed_norm', bertJsonInputs([[1, 2, 9_999_999]]));
    expect(failing.status).toBe(400);
    expect(failing.body['error']).toMatch(/^ensemble 'embed_norm' step 1 \('bert'\): /);
    const badType = await infer(
      server,
      'embed_norm',
      bertJsonInputs([[1, 2]]).map((t) => ({ ...t, datatype: 'FP32' })),
    );
    expect(badType.status).toBe(400);
    expect(badType.body['error']).toMatch(/model 'embed_norm' expects 'INT64'/);
    expect((await statsOf(server, 'embed_norm'))['inference_stats']).toMatchObject({ fail: { count: 2 } });
  });
});

describe('ensembles and the repository API (control mode explicit)', () => {
  let server: TestServer;
  let root: string;
  const index = async (): Promise<Json[]> => (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as Json[];
  const rowOf = async (name: string): Promise<Json | undefined> => (await index()).find((r) => r['name'] === name);

  beforeAll(async () => {
    root = await repository();
    server = await startTestServer(root, ['--model-control-mode', 'explicit', '--load-model', 'embed_norm']);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('loading an ensemble loads its composing models', async () => {
    expect(await rowOf('embed_norm')).toMatchObject({ state: 'READY' });
    expect(await rowOf('bert')).toMatchObject({ state: 'READY' });
    expect(await rowOf('l2norm')).toMatchObject({ state: 'READY' });
    expect(await rowOf('double')).toMatchObject({ state: 'UNAVAILABLE' });
    expect(await loadModel(server, 'nested')).toEqual({ status: 200, error: '' });
    expect(await rowOf('double')).toMatchObject({ state: 'READY' });
  });

  it('unloading a composing model makes the ensemble UNAVAILABLE, naming it; loading it again restores the ensemble', async () => {
    expect((await fetch(`${server.http}/v2/repository/models/l2norm/unload`, { method: 'POST' })).status).toBe(200);
    const row = await rowOf('embed_norm');
    expect(row).toMatchObject({ state: 'UNAVAILABLE' });
    expect(row!['reason']).toMatch(/step 2 \('l2norm'\)/);
    expect((await fetch(`${server.http}/v2/models/embed_norm/ready`)).status).not.toBe(200);
    const refused = await infer(server, 'embed_norm', bertJsonInputs(tokenRows(1, 5)));
    expect(refused.status).toBe(503);
    expect(refused.body['error']).toMatch(/l2norm/);
    expect(await loadModel(server, 'l2norm')).toEqual({ status: 200, error: '' });
    expect((await infer(server, 'embed_norm', bertJsonInputs(tokenRows(1, 5)))).status).toBe(200);
  });

  it('unload_dependents unloads the composing models no other loaded ensemble uses', async () => {
    const response = await fetch(`${server.http}/v2/repository/models/nested/unload`, { method: 'POST', body: JSON.stringify({ parameters: { unload_dependents: true } }) });
    expect(response.status).toBe(200);
    for (const name of ['nested', 'embed_norm', 'double', 'bert', 'l2norm']) expect(await rowOf(name)).toMatchObject({ state: 'UNAVAILABLE' });
  });

  it('an ensemble whose steps do not fit their models fails to load, naming the step and the field', async () => {
    const wrongInput = ensembleConfig(
      'wrong_input',
      `{ name: "v" data_type: TYPE_FP32 dims: [ ${WIDTH} ] }`,
      ['out'],
      [`{ model_name: "double" input_map { key: "nope" value: "v" } output_map { key: "y" value: "out" } }`],
    );
    await addEnsemble(root, 'wrong_input', wrongInput);
    const first = await loadModel(server, 'wrong_input');
    expect(first.status).toBe(400);
    expect(first.error).toMatch(/ensemble_scheduling\.step\[1\] \('double'\) input_map 'nope': model 'double' has no input 'nope'/);

    const wrongType = ensembleConfig('wrong_type', `{ name: "v" data_type: TYPE_INT64 dims: [ ${WIDTH} ] }`, ['out'], [rowStep('double', 'v', 'out')]);
    await addEnsemble(root, 'wrong_type', wrongType);
    expect((await loadModel(server, 'wrong_type')).error).toMatch(
      /input_map 'x': ensemble tensor 'v' has data type TYPE_FP32 as input 'x' of model 'double' \(step\[1\]\) but TYPE_INT64 as ensemble input 'v'/,
    );

    const wrongShape = ensembleConfig('wrong_shape', `{ name: "v" data_type: TYPE_FP32 dims: [ 7 ] }`, ['out'], [rowStep('double', 'v', 'out')]);
    await addEnsemble(root, 'wrong_shape', wrongShape);
    expect((await loadModel(server, 'wrong_shape')).error).toMatch(/ensemble tensor 'v' has shape \[-1,32\] as input 'x' of model 'double' \(step\[1\]\) but \[-1,7\]/);

    const unknown = ensembleConfig('unknown_step', `{ name: "v" data_type: TYPE_FP32 dims: [ ${WIDTH} ] }`, ['out'], [rowStep('no_such_model', 'v', 'out')]);
    await addEnsemble(root, 'unknown_step', unknown);
    expect((await loadModel(server, 'unknown_step')).error).toMatch(/ensemble_scheduling\.step\[1\] \('no_such_model'\) model_name: model 'no_such_model' is not in the model repository/);

    const tooBig = ensembleConfig('too_big', `{ name: "v" data_type: TYPE_FP32 dims: [ ${WIDTH} ] }`, ['out'], [rowStep('double', 'v', 'out')]).replace('max_batch_size: 8', 'max_batch_size: 16');
    await addEnsemble(root, 'too_big', tooBig);
    expect((await loadModel(server, 'too_big')).error).toMatch(/max_batch_size 16 is larger than 8, the max_batch_size of model 'double'/);
  });

  it('ensembles containing each other are refused, not deadlocked', async () => {
    const step = (model: string) => `{ model_name: "${model}" input_map { key: "x" value: "v" } output_map { key: "y" value: "out" } }`;
    const config = (name: string, other: string) =>
      ensembleConfig(name, `{ name: "x" data_type: TYPE_FP32 dims: [ ${WIDTH} ] }`, ['y'], [step(other)])
        .replace(/value: "v"/, 'value: "x"')
        .replace(/value: "out"/, 'value: "y"');
    await addEnsemble(root, 'loop_a', config('loop_a', 'loop_b'));
    await addEnsemble(root, 'loop_b', config('loop_b', 'loop_a'));
    const result = await loadModel(server, 'loop_a');
    expect(result.status).toBe(400);
    expect(result.error).toMatch(/ensemble 'loop_a' contains itself through its steps' ensembles: 'loop_a' → 'loop_b' → 'loop_a'/);
  });
});
