// What Triton clients (tritonclient.http.aio, perf_analyzer) need from the KServe front ends,
// against the real server: only inference answers compressed, the LLM's every tensor declared,
// no index row for a model that never existed, 501 for shared memory, and run-time log and trace
// settings over HTTP and gRPC.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { gunzipSync } from 'node:zlib';
import { killCliServer, startCliServer, type CliServer } from '../support/cli-server.js';
import { addModel, configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';
import { grpcClients, unaryCall, type GrpcClients } from '../support/streams.js';

const LLM = 'qwen3';
let server: TestServer;
let grpc: GrpcClients;

beforeAll(async () => {
  const repository = await makeRepository([
    { name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) },
    { name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') },
  ]);
  // In the repository but unloadable: its failed load must keep its row.
  await addModel(repository, { name: 'broken', from: 'bert-tiny', config: 'name: "broken"\nbackend: "no-such-backend"\n' });
  server = await startTestServer(repository, ['--model-control-mode', 'explicit', '--load-model', LLM, '--load-model', 'bert']);
  grpc = grpcClients(server.grpcAddress);
}, 180_000);
afterAll(async () => {
  grpc?.close();
  await server?.stop();
});

interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** One HTTP exchange with the bytes as sent: fetch would undo a Content-Encoding itself. */
function raw(method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${server.http}${path}`, { method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

const json = async (path: string, method = 'GET', body?: unknown) => {
  const response = await fetch(`${server.http}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

const BERT_INPUTS = ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({
  name,
  datatype: 'INT64',
  shape: [1, 3],
  data: name === 'input_ids' ? [101, 2023, 102] : name === 'attention_mask' ? [1, 1, 1] : [0, 0, 0],
}));

describe('response compression (Triton compresses only infer and generate answers)', () => {
  const JSON_ROUTES: readonly (readonly [string, string, string?])[] = [
    ['GET', '/v2'],
    ['GET', '/v2/models/bert'],
    ['GET', '/v2/models/bert/versions/1'],
    ['GET', `/v2/models/${LLM}`],
    ['GET', '/v2/models/bert/config'],
    ['GET', '/v2/models/bert/versions/1/config'],
    ['GET', `/v2/models/${LLM}/config`],
    ['GET', '/v2/models/stats'],
    ['GET', '/v2/models/bert/stats'],
    ['GET', '/v2/models/bert/versions/1/stats'],
    ['POST', '/v2/repository/index', '{}'],
    ['POST', '/v2/repository/index', '{"ready": true}'],
    ['GET', '/v2/logging'],
    ['POST', '/v2/logging', '{}'],
    ['GET', '/v2/trace/setting'],
    ['POST', '/v2/trace/setting', '{}'],
    ['GET', '/v2/models/bert/trace/setting'],
    ['POST', '/v2/models/bert/trace/setting', '{}'],
  ];

  it.each(JSON_ROUTES.map(([method, path, body]) => ({ method, path, body })))('$method $path answers plain JSON under Accept-Encoding: gzip', async ({ method, path, body }) => {
    const answer = await raw(method, path, body, { 'accept-encoding': 'gzip, deflate' });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(() => JSON.parse(answer.body.toString('utf8'))).not.toThrow();
  });

  it.each([['/v2/health/live'], ['/v2/health/ready'], ['/v2/models/bert/ready']])('%s answers an empty, uncompressed 200', async (path) => {
    const answer = await raw('GET', path, undefined, { 'accept-encoding': 'gzip' });
    expect({ status: answer.status, encoding: answer.headers['content-encoding'], length: answer.body.byteLength }).toEqual({ status: 200, encoding: undefined, length: 0 });
  });

  it('an error answer is plain JSON too', async () => {
    const answer = await raw('GET', '/v2/models/absent', undefined, { 'accept-encoding': 'gzip' });
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(answer.body.toString('utf8'))).toEqual({ error: expect.stringContaining("'absent'") });
  });

  it('infer and generate still compress when asked, and not when not asked', async () => {
    const infer = JSON.stringify({ inputs: BERT_INPUTS });
    const zipped = await raw('POST', '/v2/models/bert/infer', infer, { 'accept-encoding': 'gzip' });
    expect(zipped.status).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(zipped.body).toString('utf8'))).toMatchObject({ model_name: 'bert', outputs: expect.any(Array) });
    const plain = await raw('POST', '/v2/models/bert/infer', infer);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const generate = JSON.stringify({ text_input: 'Hello', parameters: { temperature: 0, max_tokens: 3, ignore_eos: true } });
    const generated = await raw('POST', `/v2/models/${LLM}/generate`, generate, { 'accept-encoding': 'gzip' });
    expect(generated.status).toBe(200);
    expect(generated.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(generated.body).toString('utf8'))).toMatchObject({ model_name: LLM, text_output: expect.stringMatching(/^Hello/) });
  });
});

// The vLLM backend's names and types (its auto_complete_config), plus Conveyor's max_tokens.
const LLM_INPUTS = [
  ['text_input', 'BYTES', [1], false],
  ['stream', 'BOOL', [1], true],
  ['max_tokens', 'INT32', [1], true],
  ['sampling_parameters', 'BYTES', [1], true],
  ['exclude_input_in_output', 'BOOL', [1], true],
  ['return_finish_reason', 'BOOL', [1], true],
  ['return_num_input_tokens', 'BOOL', [1], true],
  ['return_num_output_tokens', 'BOOL', [1], true],
] as const;
const LLM_OUTPUTS = [
  ['text_output', 'BYTES', [-1]],
  ['finish_reason', 'BYTES', [-1]],
  ['num_input_tokens', 'UINT32', [1]],
  ['num_output_tokens', 'UINT32', [-1]],
] as const;
const configType = (wire: string) => (wire === 'BYTES' ? 'TYPE_STRING' : `TYPE_${wire}`);
const byName = <T extends { name: unknown }>(list: readonly T[]) => [...list].sort((a, b) => String(a.name).localeCompare(String(b.name)));

describe("the LLM's inputs and outputs, auto-completed as Triton's vLLM backend does", () => {
  it('HTTP model metadata declares every input the server accepts and every output it gives', async () => {
    const { body } = await json(`/v2/models/${LLM}`);
    expect(byName(body['inputs'] as { name: string }[])).toEqual(byName(LLM_INPUTS.map(([name, datatype, shape]) => ({ name, datatype, shape }))));
    expect(byName(body['outputs'] as { name: string }[])).toEqual(byName(LLM_OUTPUTS.map(([name, datatype, shape]) => ({ name, datatype, shape }))));
  });

  it('HTTP model config marks all but text_input optional, keeping the declared ones first', async () => {
    const { body } = await json(`/v2/models/${LLM}/config`);
    const inputs = body['input'] as { name: string; data_type: string; dims: number[]; optional: boolean }[];
    expect(inputs.slice(0, 3).map((i) => i.name)).toEqual(['text_input', 'stream', 'max_tokens']);
    expect(byName(inputs.map(({ name, data_type, dims, optional }) => ({ name, data_type, dims, optional })))).toEqual(
      byName(LLM_INPUTS.map(([name, datatype, dims, optional]) => ({ name, data_type: configType(datatype), dims, optional }))),
    );
    const outputs = body['output'] as { name: string; data_type: string; dims: number[] }[];
    expect(byName(outputs.map(({ name, data_type, dims }) => ({ name, data_type, dims })))).toEqual(
      byName(LLM_OUTPUTS.map(([name, datatype, dims]) => ({ name, data_type: configType(datatype), dims }))),
    );
  });

  it('gRPC ModelMetadata and ModelConfig say the same', async () => {
    const metadata = (await unaryCall(grpc.inference, 'ModelMetadata', { name: LLM, version: '' })).reply!;
    const inputs = (metadata['inputs'] as { name: string; datatype: string; shape: string[] }[]).map(({ name, datatype, shape }) => ({ name, datatype, shape: shape.map(Number) }));
    expect(byName(inputs)).toEqual(byName(LLM_INPUTS.map(([name, datatype, shape]) => ({ name, datatype, shape: [...shape] }))));
    expect((metadata['outputs'] as { name: string }[]).map((o) => o.name).sort()).toEqual(LLM_OUTPUTS.map(([name]) => name).sort());
    const config = (await unaryCall(grpc.inference, 'ModelConfig', { name: LLM, version: '' })).reply!['config'] as { input: { name: string; optional: boolean; data_type: string }[] };
    expect(byName(config.input.map(({ name, optional, data_type }) => ({ name, optional, data_type })))).toEqual(
      byName(LLM_INPUTS.map(([name, datatype, , optional]) => ({ name, optional, data_type: configType(datatype) }))),
    );
  });

  it('a request using the auto-completed inputs (sampling_parameters, return_*) is served', async () => {
    const { status, body } = await json(`/v2/models/${LLM}/generate`, 'POST', {
      text_input: 'Hello',
      sampling_parameters: JSON.stringify({ temperature: 0, max_tokens: 4, ignore_eos: true }),
      exclude_input_in_output: true,
      return_finish_reason: true,
      return_num_input_tokens: true,
      return_num_output_tokens: true,
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ finish_reason: 'length', num_output_tokens: 4, num_input_tokens: expect.any(Number), text_output: expect.any(String) });
  });
});

describe('repository index after failed loads', () => {
  const index = async () => (await json('/v2/repository/index', 'POST', {})).body as unknown as { name: string; state: string; reason: string }[];

  it('a model that never existed leaves no row, over HTTP and gRPC', async () => {
    const http = await json('/v2/repository/models/ghost/load', 'POST', {});
    expect(http.status).toBe(400);
    expect(http.body).toEqual({ error: expect.stringContaining("'ghost'") });
    const viaGrpc = await unaryCall(grpc.inference, 'RepositoryModelLoad', { repository_name: '', model_name: 'ghost2', parameters: {} });
    expect(viaGrpc.error?.code).toBe(3);
    const names = (await index()).map((row) => row.name);
    expect(names).not.toContain('ghost');
    expect(names).not.toContain('ghost2');
    expect(names).toEqual(expect.arrayContaining([LLM, 'bert', 'broken']));
  });

  it('a model in the repository that fails to load keeps its UNAVAILABLE row with the reason', async () => {
    expect((await json('/v2/repository/models/broken/load', 'POST', {})).status).toBe(400);
    const row = (await index()).find((r) => r.name === 'broken');
    expect(row).toMatchObject({ state: 'UNAVAILABLE', reason: expect.stringContaining('no-such-backend') });
  });
});

describe('shared memory is not supported', () => {
  const ROUTES = ['systemsharedmemory', 'cudasharedmemory'].flatMap((kind) => [
    ['GET', `/v2/${kind}/status`],
    ['GET', `/v2/${kind}/region/r0/status`],
    ['POST', `/v2/${kind}/region/r0/register`],
    ['POST', `/v2/${kind}/unregister`],
    ['POST', `/v2/${kind}/region/r0/unregister`],
  ]);

  it.each(ROUTES)('%s %s answers 501 in KServe’s error shape', async (method, path) => {
    const answer = await json(path!, method, method === 'POST' ? { key: '/shm', offset: 0, byte_size: 16 } : undefined);
    expect(answer.status).toBe(501);
    expect(answer.body).toEqual({ error: expect.stringMatching(/shared memory is not supported/) });
  });

  it.each(['SystemSharedMemoryStatus', 'SystemSharedMemoryRegister', 'CudaSharedMemoryStatus', 'CudaSharedMemoryUnregister'])('gRPC %s answers UNIMPLEMENTED', async (rpc) => {
    const { error } = await unaryCall(grpc.inference, rpc, { name: 'r0' });
    expect(error?.code).toBe(12);
    expect(error?.details).toMatch(/not supported/);
  });
});

describe('log settings (v2/logging, gRPC LogSettings)', () => {
  it('reads the defaults, changes them, and shows the change on both protocols', async () => {
    expect((await json('/v2/logging')).body).toEqual({ log_file: '', log_info: true, log_warning: true, log_error: true, log_verbose_level: 0, log_format: 'default' });
    const changed = await json('/v2/logging', 'POST', { log_verbose_level: 2, log_format: 'ISO8601', log_warning: false });
    expect(changed).toEqual({ status: 200, body: { log_file: '', log_info: true, log_warning: false, log_error: true, log_verbose_level: 2, log_format: 'ISO8601' } });
    const viaGrpc = (await unaryCall(grpc.inference, 'LogSettings', { settings: {} })).reply!['settings'] as Record<string, Record<string, unknown>>;
    expect(viaGrpc['log_verbose_level']).toMatchObject({ uint32_param: 2 });
    expect(viaGrpc['log_format']).toMatchObject({ string_param: 'ISO8601' });
    const back = await unaryCall(grpc.inference, 'LogSettings', {
      settings: { log_verbose_level: { uint32_param: 0 }, log_format: { string_param: 'default' }, log_warning: { bool_param: true } },
    });
    expect(back.reply!['settings']).toMatchObject({ log_verbose_level: { uint32_param: 0 }, log_warning: { bool_param: true } });
    expect((await json('/v2/logging')).body).toMatchObject({ log_verbose_level: 0, log_format: 'default', log_warning: true });
  });

  it.each([
    [{ log_info: 'yes' }, /log_info' must be a boolean/],
    [{ log_verbose_level: -1 }, /log_verbose_level' must be an integer/],
    [{ log_format: 'json' }, /log_format' must be one of default, ISO8601/],
    [{ log_file: '/tmp/conveyor.log' }, /cannot be changed at run time/],
    [{ log_info: false, log_colour: true }, /unknown log setting 'log_colour'/],
  ])('refuses %j with 400 and changes nothing', async (update, message) => {
    const before = (await json('/v2/logging')).body;
    const answer = await json('/v2/logging', 'POST', update);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: expect.stringMatching(message) });
    expect((await json('/v2/logging')).body).toEqual(before);
  });

  it('gRPC refuses a bad value with INVALID_ARGUMENT', async () => {
    const { error } = await unaryCall(grpc.inference, 'LogSettings', { settings: { log_info: { string_param: 'no' } } });
    expect(error?.code).toBe(3);
    expect(error?.details).toMatch(/log_info' must be a boolean/);
  });

  it("log_info false silences the server's info lines until it is switched back on", async () => {
    expect((await json('/v2/logging', 'POST', { log_info: false })).status).toBe(200);
    const quietFrom = server.logs.length;
    expect((await fetch(`${server.http}/v2/repository/models/bert/load`, { method: 'POST' })).status).toBe(200);
    expect(server.logs.slice(quietFrom)).toEqual([]);
    expect((await json('/v2/logging', 'POST', { log_info: true })).status).toBe(200);
    expect((await fetch(`${server.http}/v2/repository/models/bert/load`, { method: 'POST' })).status).toBe(200);
    expect(server.logs.slice(quietFrom)).toContain('bert: version 1 READY');
  });
});

describe('trace settings (v2/trace/setting, gRPC TraceSetting)', () => {
  it('stores and returns accepted settings, globally and per model, and says nothing is traced', async () => {
    const global = await json('/v2/trace/setting');
    expect(global.body).toEqual({
      trace_file: '',
      trace_level: ['OFF'],
      trace_rate: '1000',
      trace_count: '-1',
      log_frequency: '0',
      traces_recorded: expect.stringMatching(/^none: .*records no traces/),
    });
    const model = await json('/v2/models/bert/trace/setting', 'POST', { trace_level: ['TIMESTAMPS'], trace_rate: 10 });
    expect(model.body).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_rate: '10', trace_count: '-1' });
    expect((await json('/v2/trace/setting')).body).toMatchObject({ trace_level: ['OFF'], trace_rate: '1000' });
    await json('/v2/trace/setting', 'POST', { trace_count: '5' });
    expect((await json('/v2/models/bert/trace/setting')).body).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_count: '5' });
    const viaGrpc = (await unaryCall(grpc.inference, 'TraceSetting', { settings: {}, model_name: 'bert' })).reply!['settings'] as Record<string, { value: string[] }>;
    expect(viaGrpc['trace_level']!.value).toEqual(['TIMESTAMPS']);
    expect(viaGrpc['traces_recorded']!.value[0]).toMatch(/records no traces/);
    // An empty list over gRPC (null over HTTP) drops the model's own value.
    await unaryCall(grpc.inference, 'TraceSetting', { settings: { trace_level: { value: [] } }, model_name: 'bert' });
    expect((await json('/v2/models/bert/trace/setting')).body).toMatchObject({ trace_level: ['OFF'], trace_rate: '10' });
    expect((await json('/v2/models/bert/trace/setting', 'POST', { trace_rate: null })).body).toMatchObject({ trace_rate: '1000' });
    await json('/v2/trace/setting', 'POST', { trace_count: '-1' });
  });

  it.each([
    ['/v2/trace/setting', { trace_level: ['LOUD'] }, /levels are OFF, TIMESTAMPS, TENSORS/],
    ['/v2/trace/setting', { trace_level: ['OFF', 'TIMESTAMPS'] }, /cannot combine OFF/],
    ['/v2/trace/setting', { trace_rate: 'fast' }, /trace_rate' must be an integer >= 1/],
    ['/v2/trace/setting', { trace_rate: null }, /cannot be cleared globally/],
    ['/v2/trace/setting', { trace_mode: 'opentelemetry' }, /unknown trace setting 'trace_mode'/],
    ['/v2/models/bert/trace/setting', { trace_count: { n: 1 } }, /must be a string, a number/],
  ])('POST %s %j is refused with 400 and changes nothing', async (path, update, message) => {
    const before = (await json(path)).body;
    const answer = await json(path, 'POST', update);
    expect(answer).toEqual({ status: 400, body: { error: expect.stringMatching(message) } });
    expect((await json(path)).body).toEqual(before);
  });

  it('an unknown model is refused on both protocols', async () => {
    expect((await json('/v2/models/absent/trace/setting')).status).toBe(400);
    const { error } = await unaryCall(grpc.inference, 'TraceSetting', { settings: {}, model_name: 'absent' });
    expect(error?.code).toBe(3);
  });
});

describe('log settings applied to the CLI’s logger (pino on stdout)', () => {
  let cli: CliServer | undefined;
  afterAll(async () => {
    if (cli) await killCliServer(cli);
  });

  it('log_format ISO8601 changes the timestamps, and log_info false drops info lines (request lines too)', async () => {
    const repository = await makeRepository([{ name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') }]);
    cli = await startCliServer(repository, ['--model-control-mode', 'explicit']);
    const post = (path: string, body?: unknown, requestId?: string) =>
      fetch(`${cli!.http}${path}`, { method: 'POST', ...(requestId ? { headers: { 'x-request-id': requestId } } : {}), ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    expect(typeof (await cli.waitForLog(/^HTTP \(KServe v2\) listening/))['time']).toBe('number');
    expect((await post('/v2/logging', { log_format: 'ISO8601' })).status).toBe(200);
    expect((await post('/v2/repository/models/bert/load')).status).toBe(200);
    const ready = await cli.waitForLog(/^bert: version 1 READY/);
    expect(ready['time']).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/));
    expect((await post('/v2/logging', { log_info: false })).status).toBe(200);
    expect((await post('/v2/repository/models/bert/unload', undefined, 'quiet-unload')).status).toBe(200);
    expect((await post('/v2/logging', { log_info: true }, 'back-on')).status).toBe(200);
    expect((await post('/v2/repository/models/bert/load')).status).toBe(200);
    // stdout arrives in order: once the second READY is read, every earlier line has been too.
    await vi.waitFor(() => expect(cli!.lines.filter((l) => /^bert: version 1 READY/.test(l.msg))).toHaveLength(2), { timeout: 60_000 });
    expect(cli.lines.filter((l) => /unloaded/.test(l.msg) || l['reqId'] === 'quiet-unload')).toEqual([]);
    // The request that switched info back on arrived while it was off: only its completion shows.
    expect(cli.lines.filter((l) => l['reqId'] === 'back-on').map((l) => l.msg)).toEqual(['request completed']);
  }, 120_000);
});
