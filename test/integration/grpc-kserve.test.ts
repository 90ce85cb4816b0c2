// The KServe v2 / Triton gRPC front end against the real server: a client generated at runtime
// from protos/ (as grpcurl or a Triton-proto stub would be) over loopback, real ONNX models.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { parseServerOptions } from '../../src/config/server-options.js';
import { startServer, type RunningServer } from '../../src/main.js';

const PROTOS = join(import.meta.dirname, '..', '..', 'protos');
const IMAGE = 3 * 224 * 224;

type Reply = Record<string, unknown>;

/** A repository holding the built resnet-tiny as "resnet" (copied: it is about 1 MB). */
async function resnetRepository(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'conveyor-grpc-'));
  await cp(join(DEFAULT_REPOSITORY, 'resnet-tiny'), join(root, 'resnet'), { recursive: true });
  const config = join(root, 'resnet', 'config.pbtxt');
  await writeFile(config, (await readFile(config, 'utf8')).replace('name: "resnet-tiny"', 'name: "resnet"'));
  return root;
}

interface GrpcTestServer extends RunningServer {
  readonly address: string;
  /** Stops the server and deletes its repository. */
  close(): Promise<void>;
}

async function start(args: readonly string[] = []): Promise<GrpcTestServer> {
  const repository = await resnetRepository();
  const options = parseServerOptions(['--model-repository', repository, '--host', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', ...args]);
  const server = await startServer(options, { log: () => {} });
  const close = async () => {
    await server.stop();
    await rm(repository, { recursive: true, force: true });
  };
  return Object.assign(server, { address: `127.0.0.1:${server.grpcPort}`, close });
}
type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

function clients(address: string): { inference: Client; health: Client } {
  const definition = loadSync(['grpc_service.proto', 'health.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTOS] });
  const root = grpc.loadPackageDefinition(definition) as unknown as {
    inference: { GRPCInferenceService: new (...a: unknown[]) => Client };
    grpc: { health: { v1: { Health: new (...a: unknown[]) => Client } } };
  };
  // tritonclient's settings: Triton accepts messages up to INT32_MAX.
  const options = { 'grpc.max_send_message_length': -1, 'grpc.max_receive_message_length': -1 };
  const credentials = grpc.credentials.createInsecure();
  return {
    inference: new root.inference.GRPCInferenceService(address, credentials, options),
    health: new root.grpc.health.v1.Health(address, credentials),
  };
}

function unary(client: Client, rpc: string, request: object): Promise<Reply> {
  return new Promise((resolve, reject) => {
    client[rpc]!(request, (error: grpc.ServiceError | null, reply: Reply) => (error ? reject(error) : resolve(reply)));
  });
}

async function statusOf(promise: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await promise;
  } catch (error) {
    const { code, details } = error as grpc.ServiceError;
    return { code, details };
  }
  throw new Error('expected the call to fail');
}

function images(batch: number): Float32Array {
  const data = new Float32Array(batch * IMAGE);
  for (let i = 0; i < data.length; i++) data[i] = Math.sin(i * 0.001);
  return data;
}

const rawBytes = (data: Float32Array) => Buffer.from(data.buffer, data.byteOffset, data.byteLength);
const floats = (raw: Uint8Array) => new Float32Array(new Uint8Array(raw).buffer);

function inferRequest(batch: number, id: string): object {
  return {
    model_name: 'resnet',
    id,
    inputs: [{ name: 'input', datatype: 'FP32', shape: [batch, 3, 224, 224] }],
    raw_input_contents: [rawBytes(images(batch))],
  };
}

describe('gRPC GRPCInferenceService (real server)', () => {
  let server: GrpcTestServer;
  let inference: Client;
  let health: Client;

  beforeAll(async () => {
    server = await start();
    ({ inference, health } = clients(server.address));
  });

  afterAll(async () => {
    inference?.close();
    health?.close();
    await server?.close();
  });

  it('answers health, metadata and config', async () => {
    expect(await unary(inference, 'ServerLive', {})).toEqual({ live: true });
    expect(await unary(inference, 'ServerReady', {})).toEqual({ ready: true });
    expect(await unary(inference, 'ModelReady', { name: 'resnet' })).toEqual({ ready: true });
    expect((await unary(inference, 'ServerMetadata', {}))['extensions']).toContain('statistics');
    expect(await unary(inference, 'ModelMetadata', { name: 'resnet' })).toMatchObject({
      name: 'resnet',
      versions: ['1'],
      inputs: [{ name: 'input', datatype: 'FP32', shape: ['-1', '3', '224', '224'] }],
      outputs: [{ name: 'logits', datatype: 'FP32', shape: ['-1', '1000'] }],
      // The precision variant serving, as string parameters (field 6; Triton clients skip it).
      parameters: { precision: { string_param: 'fp32' }, model_file: { string_param: 'model.onnx' } },
    });
    expect((await unary(inference, 'RepositoryIndex', { ready: true }))['models']).toEqual(expect.arrayContaining([{ name: 'resnet', version: '1', state: 'READY', reason: '', precision: 'fp32' }]));
    expect((await unary(inference, 'ModelConfig', { name: 'resnet' }))['config']).toMatchObject({
      name: 'resnet',
      max_batch_size: 32,
      input: [{ name: 'input', data_type: 'TYPE_FP32', format: 'FORMAT_NCHW', dims: ['3', '224', '224'] }],
      dynamic_batching: { preferred_batch_size: [8, 16, 32], max_queue_delay_microseconds: '5000' },
    });
    expect(await unary(health, 'Check', { service: '' })).toEqual({ status: 'SERVING' });
    expect(await unary(health, 'Check', { service: 'resnet' })).toEqual({ status: 'SERVING' });
    expect((await statusOf(unary(health, 'Check', { service: 'nope' }))).code).toBe(grpc.status.NOT_FOUND);
  });

  it('infers from raw_input_contents and answers in raw_output_contents, past the 4 MiB default limit', async () => {
    const reply = await unary(inference, 'ModelInfer', inferRequest(8, 'big'));
    expect(reply).toMatchObject({ model_name: 'resnet', model_version: '1', id: 'big', outputs: [{ name: 'logits', datatype: 'FP32', shape: ['8', '1000'] }] });
    const logits = floats((reply['raw_output_contents'] as Uint8Array[])[0]!);
    expect(logits).toHaveLength(8000);
    expect(logits.every(Number.isFinite)).toBe(true);
  });

  it('gives the same answer for typed contents and raw bytes', async () => {
    const data = images(1);
    const [raw, typed] = await Promise.all([
      unary(inference, 'ModelInfer', inferRequest(1, 'raw')),
      unary(inference, 'ModelInfer', { model_name: 'resnet', inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], contents: { fp32_contents: Array.from(data) } }] }),
    ]);
    expect(floats((typed['raw_output_contents'] as Uint8Array[])[0]!)).toEqual(floats((raw['raw_output_contents'] as Uint8Array[])[0]!));
  });

  it('maps errors to gRPC statuses from the catalog', async () => {
    const unknown = await statusOf(unary(inference, 'ModelInfer', { ...inferRequest(1, 'x'), model_name: 'missing' }));
    expect(unknown.code).toBe(grpc.status.INVALID_ARGUMENT);
    const mixed = await statusOf(
      unary(inference, 'ModelInfer', {
        model_name: 'resnet',
        inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], contents: { fp32_contents: [1] } }],
        raw_input_contents: [rawBytes(images(1))],
      }),
    );
    expect(mixed).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/raw_input_contents/) });
    expect((await statusOf(unary(inference, 'SystemSharedMemoryStatus', {}))).code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it('streams one response per request over ModelStreamInfer, errors in-band', async () => {
    const call = (inference['ModelStreamInfer'] as () => grpc.ClientDuplexStream<object, Reply>)();
    const replies: Reply[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on('data', (reply: Reply) => replies.push(reply));
      call.on('end', resolve);
      call.on('error', reject);
    });
    call.write(inferRequest(1, 'first'));
    call.write({ model_name: 'missing', id: 'bad' });
    call.write(inferRequest(2, 'second'));
    call.end();
    await done;

    const answered = replies.filter((r) => r['infer_response']).map((r) => r['infer_response'] as Reply);
    expect(answered.map((r) => r['id']).sort()).toEqual(['first', 'second']);
    for (const response of answered) expect(response['parameters']).toMatchObject({ triton_final_response: { bool_param: true } });
    expect(replies.filter((r) => r['error_message']).map((r) => r['error_message'])).toEqual([expect.stringMatching(/missing/)]);
  });

  it('survives a stream cancelled with requests in flight', async () => {
    const call = (inference['ModelStreamInfer'] as () => grpc.ClientDuplexStream<object, Reply>)();
    const closed = new Promise<number>((resolve) => call.on('error', (error: grpc.ServiceError) => resolve(error.code)));
    const firstReply = new Promise<void>((resolve) => call.once('data', () => resolve()));
    call.on('data', () => {});
    for (let i = 0; i < 6; i++) call.write(inferRequest(4, `c${i}`));
    // Cancelled once the server has answered one: the others are still queued or running.
    await firstReply;
    call.cancel();
    expect(await closed).toBe(grpc.status.CANCELLED);
    const after = await unary(inference, 'ModelInfer', inferRequest(1, 'after'));
    expect(after['id']).toBe('after');
  });

  it('counts inferences in ModelStatistics and lists the repository', async () => {
    const stats = (await unary(inference, 'ModelStatistics', { name: 'resnet' }))['model_stats'] as Reply[];
    expect(stats).toHaveLength(1);
    expect(Number(stats[0]!['inference_count'])).toBeGreaterThanOrEqual(12);
    expect((stats[0]!['inference_stats'] as Record<string, Reply>)['success']!['count']).not.toBe('0');
    const index = (await unary(inference, 'RepositoryIndex', {}))['models'] as Reply[];
    expect(index).toContainEqual(expect.objectContaining({ name: 'resnet', state: 'READY' }));
  });
});

describe('gRPC repository control (explicit mode)', () => {
  let server: GrpcTestServer;
  let inference: Client;

  beforeAll(async () => {
    server = await start(['--model-control-mode', 'explicit']);
    ({ inference } = clients(server.address));
  });

  afterAll(async () => {
    inference?.close();
    await server?.close();
  });

  it('loads with a config override and unloads', async () => {
    expect(await unary(inference, 'ModelReady', { name: 'resnet' }).catch(() => ({ ready: false }))).toEqual({ ready: false });
    const config = JSON.stringify({
      backend: 'onnxruntime',
      max_batch_size: 4,
      input: [{ name: 'input', data_type: 'TYPE_FP32', dims: [3, 224, 224] }],
      output: [{ name: 'logits', data_type: 'TYPE_FP32', dims: [1000] }],
    });
    await unary(inference, 'RepositoryModelLoad', { model_name: 'resnet', parameters: { config: { string_param: config } } });
    expect(await unary(inference, 'ModelReady', { name: 'resnet' })).toEqual({ ready: true });
    expect(((await unary(inference, 'ModelConfig', { name: 'resnet' }))['config'] as Reply)['max_batch_size']).toBe(4);
    await unary(inference, 'RepositoryModelUnload', { model_name: 'resnet', parameters: { unload_dependents: { bool_param: false } } });
    expect(await unary(inference, 'ModelReady', { name: 'resnet' }).catch(() => ({ ready: false }))).toEqual({ ready: false });
  });
});
