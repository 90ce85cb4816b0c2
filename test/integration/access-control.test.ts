// Access control route by route, on the real server: every HTTP route (the list comes from
// fastify's own registry, so a route missing from the table below fails the test), every gRPC
// RPC (from the loaded service definitions) and the metrics port, each called with no key, a
// wrong key, an API key and an admin key, on four servers: no keys (the baseline), API + admin
// keys, API keys only, and key files with --auth-health and --auth-metrics. A request the policy
// lets through must get exactly the answer the keyless server gives; a refused one gets 401/403
// (gRPC UNAUTHENTICATED/PERMISSION_DENIED) in its protocol's shape.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { AccessClass } from '../../src/security/access-policy.js';
import { loadServiceDefinitions, rpcAccess } from '../../src/server/kit/grpc/index.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const API = 'sk-api-test';
const ADMIN = 'sk-admin-test';
const ORIGIN = 'https://app.example';

type Credential = 'none' | 'wrong' | 'api' | 'admin';
const AUTHORIZATION: Readonly<Record<Credential, string | undefined>> = {
  none: undefined,
  wrong: 'Bearer sk-wrong',
  api: `Bearer ${API}`,
  admin: `Bearer ${ADMIN}`,
};
const CREDENTIALS = Object.keys(AUTHORIZATION) as Credential[];

/** Every HTTP route the server has (HEAD twins of GET routes aside), with its access class. */
const HTTP_ROUTES: Readonly<Record<string, AccessClass>> = {
  'GET /v2/health/live': 'health',
  'GET /v2/health/ready': 'health',
  'GET /v2/models/:model/ready': 'health',
  'GET /v2/models/:model/versions/:version/ready': 'health',
  'GET /v2': 'api',
  'GET /v2/models/:model': 'api',
  'GET /v2/models/:model/versions/:version': 'api',
  'GET /v2/models/:model/config': 'api',
  'GET /v2/models/:model/versions/:version/config': 'api',
  'GET /v2/models/stats': 'api',
  'GET /v2/models/:model/stats': 'api',
  'GET /v2/models/:model/versions/:version/stats': 'api',
  'POST /v2/models/:model/infer': 'api',
  'POST /v2/models/:model/versions/:version/infer': 'api',
  'POST /v2/models/:model/generate': 'api',
  'POST /v2/models/:model/versions/:version/generate': 'api',
  'POST /v2/models/:model/generate_stream': 'api',
  'POST /v2/models/:model/versions/:version/generate_stream': 'api',
  'POST /v2/repository/index': 'api',
  'POST /v2/repository/models/:model/load': 'control',
  'POST /v2/repository/models/:model/unload': 'control',
  'GET /v2/logging': 'api',
  'POST /v2/logging': 'control',
  'GET /v2/trace/setting': 'api',
  'POST /v2/trace/setting': 'control',
  'GET /v2/models/:model/trace/setting': 'api',
  'POST /v2/models/:model/trace/setting': 'control',
  'GET /v2/systemsharedmemory/status': 'api',
  'GET /v2/systemsharedmemory/region/:region/status': 'api',
  'POST /v2/systemsharedmemory/region/:region/register': 'control',
  'POST /v2/systemsharedmemory/unregister': 'control',
  'POST /v2/systemsharedmemory/region/:region/unregister': 'control',
  'GET /v2/cudasharedmemory/status': 'api',
  'GET /v2/cudasharedmemory/region/:region/status': 'api',
  'POST /v2/cudasharedmemory/region/:region/register': 'control',
  'POST /v2/cudasharedmemory/unregister': 'control',
  'POST /v2/cudasharedmemory/region/:region/unregister': 'control',
  'GET /v1/ws': 'api',
  'GET /v1/models': 'api',
  'GET /v1/models/:id': 'api',
  'POST /v1/chat/completions': 'api',
  'POST /v1/completions': 'api',
  'POST /v1/chat/completions/render': 'api',
  'POST /v1/completions/render': 'api',
  'GET /metrics': 'metrics',
  'POST /v1/embeddings': 'api',
  'OPTIONS /v1/*': 'api',
  'POST /v1/messages': 'api',
  'POST /v1/messages/count_tokens': 'api',
  'POST /v1/responses': 'api',
  'GET /v1/responses/:id': 'api',
  'GET /v1/responses/:id/input_items': 'api',
  'DELETE /v1/responses/:id': 'api',
  'POST /v1/responses/:id/cancel': 'api',
  'POST /tokenize': 'api',
  'POST /detokenize': 'api',
  'OPTIONS /tokenize': 'api',
  'OPTIONS /detokenize': 'api',
  'GET /tokenizer_info': 'api',
  'OPTIONS /tokenizer_info': 'api',
  'POST /inference/v1/generate': 'api',
  'OPTIONS /inference/v1/generate': 'api',
  'POST /sleep': 'control',
  'POST /wake_up': 'control',
  'GET /is_sleeping': 'api',
  'GET /': 'ui',
  'GET /ui': 'ui',
  'GET /ui/': 'ui',
  'GET /ui/app.js': 'ui',
  'GET /ui/style.css': 'ui',
  'GET /ui/api/status': 'api',
};

/** Every gRPC method, by path, with its access class. */
const GRPC_RPCS: Readonly<Record<string, AccessClass>> = {
  '/grpc.health.v1.Health/Check': 'health',
  '/grpc.health.v1.Health/Watch': 'health',
  '/inference.GRPCInferenceService/ServerLive': 'health',
  '/inference.GRPCInferenceService/ServerReady': 'health',
  '/inference.GRPCInferenceService/ModelReady': 'health',
  '/inference.GRPCInferenceService/ServerMetadata': 'api',
  '/inference.GRPCInferenceService/ModelMetadata': 'api',
  '/inference.GRPCInferenceService/ModelInfer': 'api',
  '/inference.GRPCInferenceService/ModelStreamInfer': 'api',
  '/inference.GRPCInferenceService/ModelConfig': 'api',
  '/inference.GRPCInferenceService/ModelStatistics': 'api',
  '/inference.GRPCInferenceService/RepositoryIndex': 'api',
  '/inference.GRPCInferenceService/RepositoryModelLoad': 'control',
  '/inference.GRPCInferenceService/RepositoryModelUnload': 'control',
  '/inference.GRPCInferenceService/SystemSharedMemoryStatus': 'api',
  '/inference.GRPCInferenceService/SystemSharedMemoryRegister': 'control',
  '/inference.GRPCInferenceService/SystemSharedMemoryUnregister': 'control',
  '/inference.GRPCInferenceService/CudaSharedMemoryStatus': 'api',
  '/inference.GRPCInferenceService/CudaSharedMemoryRegister': 'control',
  '/inference.GRPCInferenceService/CudaSharedMemoryUnregister': 'control',
  '/inference.GRPCInferenceService/TraceSetting': 'control',
  '/inference.GRPCInferenceService/LogSettings': 'control',
  '/conveyor.v1.GenerationService/Generate': 'api',
};

/** 'pass': the keyless server's answer; a number: the refusal's HTTP status. */
type Expected = 'pass' | 401 | 403;
type ClassTable = Readonly<Record<AccessClass, Readonly<Record<Credential, Expected>>>>;
const OPEN = { none: 'pass', wrong: 'pass', api: 'pass', admin: 'pass' } as const;
const KEYED = { none: 401, wrong: 401, api: 'pass', admin: 'pass' } as const;
const ADMIN_ONLY = { none: 401, wrong: 401, api: 403, admin: 'pass' } as const;

/** SECURITY.md's table: per server configuration, what each class answers each credential. */
const CONFIGURATIONS: Readonly<Record<string, { args: () => string[]; expected: ClassTable }>> = {
  'API and admin keys': {
    args: () => ['--api-key', API, '--admin-key', ADMIN],
    expected: { api: KEYED, control: ADMIN_ONLY, health: OPEN, metrics: OPEN, ui: OPEN },
  },
  'API keys only': {
    args: () => ['--api-key', API],
    // No admin key is configured, so the admin credential is just an unknown key.
    expected: { api: { ...KEYED, admin: 401 }, control: { none: 401, wrong: 401, api: 403, admin: 401 }, health: OPEN, metrics: OPEN, ui: OPEN },
  },
  'key files, --auth-health, --auth-metrics': {
    args: () => ['--api-key-file', keyFile(`# serving\n${API}\n`), '--admin-key-file', keyFile(`${ADMIN}\n`), '--auth-health', 'true', '--auth-metrics', 'true'],
    expected: { api: KEYED, control: ADMIN_ONLY, health: KEYED, metrics: KEYED, ui: OPEN },
  },
};

function keyFile(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'conveyor-keys-')), 'keys.txt');
  writeFileSync(path, text);
  return path;
}

let repository: string;
let baseline: TestServer;
const servers = new Map<string, TestServer>();

beforeAll(async () => {
  repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  const common = ['--model-control-mode', 'explicit', '--load-model', '*', '--cors-allow-origin', ORIGIN];
  baseline = await startTestServer(repository, common);
  for (const [name, { args }] of Object.entries(CONFIGURATIONS)) servers.set(name, await startTestServer(repository, [...common, ...args()]));
}, 300_000);
afterAll(async () => {
  await Promise.all([baseline, ...servers.values()].map((s) => s?.stop()));
});

// Requests name a model no server has, so every handler that runs answers at once. Control calls
// name another model than the health checks ask about, so a control call that got through on one
// server can never change what another call sees there.
const ABSENT = 'absent';
const ABSENT_CONTROL = 'absent-control';
const targetOf = (access: AccessClass) => (access === 'control' ? ABSENT_CONTROL : ABSENT);
const concretePath = (url: string) =>
  url
    .replace(':model', targetOf(HTTP_ROUTES[`POST ${url}`] ?? 'api'))
    .replace(':version', '1')
    .replace(':region', 'r0')
    .replace(':id', ABSENT)
    .replace('*', 'x')
    // vLLM's sleep routes name their model in the query: an absent one, so no server's LLM sleeps.
    .replace(/^\/(sleep|wake_up|is_sleeping)$/, (path) => `${path}?model=${ABSENT}`);

interface HttpAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly wwwAuthenticate: string | null;
}

async function httpAnswer(server: TestServer, route: string, credential: Credential): Promise<HttpAnswer> {
  const [method, url] = route.split(' ') as [string, string];
  const authorization = AUTHORIZATION[credential];
  if (url === '/v1/ws') return { status: await upgradeStatus(server, authorization), body: null, wwwAuthenticate: null };
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) };
  const response = await fetch(`${server.http}${concretePath(url)}`, { method, headers, ...(method === 'POST' ? { body: '{}' } : {}) });
  const text = await response.text();
  // Every answer is JSON but a served scrape (GET /metrics: Prometheus text) and the UI's static files.
  const json = response.headers.get('content-type')?.includes('json') ?? false;
  return { status: response.status, body: text === '' ? null : json ? (JSON.parse(text) as unknown) : text, wwwAuthenticate: response.headers.get('www-authenticate') };
}

function upgradeStatus(server: TestServer, authorization: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${server.http.replace('http', 'ws')}/v1/ws`, { headers: authorization ? { authorization } : {} });
    socket.once('open', () => {
      socket.close();
      resolve(101);
    });
    socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
    socket.once('error', reject);
  });
}

/** The refusal's body in its front end's shape: OpenAI's under /v1 and the tokenizer routes, Triton's elsewhere. */
function expectRefusalShape(route: string, answer: HttpAnswer): void {
  const url = route.split(' ')[1]!;
  if (url === '/v1/ws') return;
  expect(answer.wwwAuthenticate, route).toBe('Bearer');
  if (url.startsWith('/v1/messages')) {
    // The Anthropic routes answer in Anthropic's error shape.
    const type = answer.status === 401 ? 'authentication_error' : 'permission_error';
    expect(answer.body, route).toEqual({ type: 'error', error: { type, message: expect.any(String) } });
  } else if (url.startsWith('/v1/') || ['/tokenize', '/detokenize', '/tokenizer_info', '/inference/v1/generate', '/sleep', '/wake_up', '/is_sleeping'].includes(url)) {
    const type = answer.status === 401 ? 'authentication_error' : 'permission_error';
    expect(answer.body, route).toEqual({ error: { message: expect.any(String), type, param: null, code: expect.any(String) } });
  } else {
    expect(answer.body, route).toEqual({ error: expect.any(String) });
  }
}

describe('the HTTP route table', () => {
  it('names every route the server registered, with the class the route declares', () => {
    for (const server of [baseline, ...servers.values()]) {
      const registered = server.httpRoutes.filter((r) => r.method !== 'HEAD');
      expect(Object.fromEntries(registered.map((r) => [`${r.method} ${r.url}`, r.access]))).toEqual(HTTP_ROUTES);
      // fastify's automatic HEAD routes share their GET route's class.
      for (const head of server.httpRoutes.filter((r) => r.method === 'HEAD')) expect(HTTP_ROUTES[`GET ${head.url}`]).toBe(head.access);
    }
  });
});

describe.each(Object.keys(CONFIGURATIONS))('HTTP routes, %s', (name) => {
  it.each(Object.entries(HTTP_ROUTES))('%s (%s)', async (route, access) => {
    const server = servers.get(name)!;
    const open = await httpAnswer(baseline, route, 'none');
    expect([401, 403]).not.toContain(open.status);
    for (const credential of CREDENTIALS) {
      const expected = CONFIGURATIONS[name]!.expected[access][credential];
      const answer = await httpAnswer(server, route, credential);
      if (expected === 'pass') {
        expect({ credential, status: answer.status }).toEqual({ credential, status: open.status });
      } else {
        expect({ credential, status: answer.status }).toEqual({ credential, status: expected });
        expectRefusalShape(route, answer);
      }
    }
  });
});

type GrpcOutcome = number | 'message';
type MethodDefinition = grpc.MethodDefinition<object, object>;

function grpcMethods(): [string, MethodDefinition][] {
  const definitions = loadServiceDefinitions();
  return [definitions.inference, definitions.health, definitions.generation].flatMap((service) =>
    Object.values(service).map((method) => [method.path, method as MethodDefinition] as [string, MethodDefinition]),
  );
}

/** The call's status code, or 'message' if it answered with one (streams that do not end on their own). */
function grpcOutcome(server: TestServer, method: MethodDefinition, credential: Credential): Promise<GrpcOutcome> {
  const client = new grpc.Client(server.grpcAddress, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  const authorization = AUTHORIZATION[credential];
  if (authorization) metadata.set('authorization', authorization);
  // Each message takes the fields it has: a model name, a health service name.
  const target = targetOf(rpcAccess(method.path));
  const request = { name: target, model_name: target, model: target, service: target };
  const { path, requestSerialize: serialize, responseDeserialize: deserialize } = method;
  return new Promise((resolve) => {
    const done = (outcome: GrpcOutcome): void => {
      resolve(outcome);
      client.close();
    };
    if (!method.requestStream && !method.responseStream) {
      client.makeUnaryRequest(path, serialize, deserialize, request, metadata, (error) => done(error ? error.code : grpc.status.OK));
      return;
    }
    const call = method.requestStream ? client.makeBidiStreamRequest(path, serialize, deserialize, metadata) : client.makeServerStreamRequest(path, serialize, deserialize, request, metadata);
    call.on('data', () => {
      done('message');
      call.cancel();
    });
    call.on('error', (error: grpc.ServiceError) => done(error.code));
    call.on('status', (status: grpc.StatusObject) => done(status.code));
    if (method.requestStream) {
      const duplex = call as grpc.ClientDuplexStream<object, object>;
      duplex.write(request);
      duplex.end();
    }
  });
}

const GRPC_REFUSAL: Readonly<Record<401 | 403, number>> = { 401: grpc.status.UNAUTHENTICATED, 403: grpc.status.PERMISSION_DENIED };

describe('the gRPC table', () => {
  it('names every RPC of the three services, with the class the server gives it', () => {
    const methods = grpcMethods();
    expect(Object.fromEntries(methods.map(([path]) => [path, rpcAccess(path)]))).toEqual(GRPC_RPCS);
  });
});

describe.each(Object.keys(CONFIGURATIONS))('gRPC, %s', (name) => {
  it.each(grpcMethods().map(([path, method]) => [path, GRPC_RPCS[path] ?? 'api', method] as const))('%s (%s)', async (_path, access, method) => {
    const server = servers.get(name)!;
    const open = await grpcOutcome(baseline, method, 'none');
    expect([grpc.status.UNAUTHENTICATED, grpc.status.PERMISSION_DENIED]).not.toContain(open);
    for (const credential of CREDENTIALS) {
      const expected = CONFIGURATIONS[name]!.expected[access][credential];
      const outcome = await grpcOutcome(server, method, credential);
      expect({ credential, outcome }).toEqual({ credential, outcome: expected === 'pass' ? open : GRPC_REFUSAL[expected] });
    }
  });
});

describe.each(Object.keys(CONFIGURATIONS))('the metrics port, %s', (name) => {
  it('answers each credential as the metrics class says', async () => {
    const server = servers.get(name)!;
    for (const credential of CREDENTIALS) {
      const authorization = AUTHORIZATION[credential];
      const response = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`, { headers: authorization ? { authorization } : {} });
      const expected = CONFIGURATIONS[name]!.expected.metrics[credential];
      expect({ credential, status: response.status }).toEqual({ credential, status: expected === 'pass' ? 200 : expected });
      if (expected === 'pass') expect(await response.text()).toContain('nv_inference_request_success');
      else expect(response.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('answers its liveness and readiness probes as the health class says', async () => {
    const server = servers.get(name)!;
    for (const path of ['/v2/health/live', '/v2/health/ready']) {
      for (const credential of CREDENTIALS) {
        const authorization = AUTHORIZATION[credential];
        const response = await fetch(`http://127.0.0.1:${server.metricsPort}${path}`, { headers: authorization ? { authorization } : {} });
        const expected = CONFIGURATIONS[name]!.expected.health[credential];
        expect({ path, credential, status: response.status }).toEqual({ path, credential, status: expected === 'pass' ? 200 : expected });
      }
    }
  });
});

describe('keys end to end (API and admin keys)', () => {
  const keyed = () => servers.get('API and admin keys')!;

  it('serves a chat completion, a Triton generate and a gRPC Generate with the API key', async () => {
    const sdk = new OpenAI({ baseURL: `${keyed().http}/v1`, apiKey: API, maxRetries: 0 });
    const chat = await sdk.chat.completions.create({ model: 'qwen3', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    expect(chat.choices).toHaveLength(1);
    const generate = await fetch(`${keyed().http}/v2/models/qwen3/generate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API}` },
      body: JSON.stringify({ text_input: 'hi', parameters: { max_tokens: 2 } }),
    });
    expect(generate.status).toBe(200);
    expect(await generate.json()).toMatchObject({ model_name: 'qwen3', text_output: expect.any(String) });
    const method = grpcMethods().find(([path]) => path.endsWith('/Generate'))![1];
    const client = new grpc.Client(keyed().grpcAddress, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${API}`);
    const call = client.makeServerStreamRequest(method.path, method.requestSerialize, method.responseDeserialize, { model: 'qwen3', text: 'hi', sampling: { max_tokens: 2 } }, metadata);
    const messages: object[] = [];
    await new Promise<void>((resolve, reject) =>
      call
        .on('data', (m: object) => messages.push(m))
        .on('end', resolve)
        .on('error', reject),
    );
    client.close();
    expect(messages.at(-1)).toMatchObject({ final: expect.anything() });
  });

  it('refuses an unload with the API key and changes nothing; the admin key unloads and loads', async () => {
    const sdk = new OpenAI({ baseURL: `${keyed().http}/v1`, apiKey: API, maxRetries: 0 });
    const post = (path: string, key: string) => fetch(`${keyed().http}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    expect((await post('/v2/repository/models/qwen3/unload', API)).status).toBe(403);
    expect(keyed().service.modelReady('qwen3')).toBe(true);
    expect((await post('/v2/repository/models/qwen3/unload', ADMIN)).status).toBe(200);
    expect(keyed().service.modelReady('qwen3')).toBe(false);
    expect((await post('/v2/repository/models/qwen3/load', ADMIN)).status).toBe(200);
    expect(keyed().service.modelReady('qwen3')).toBe(true);
    // The admin key also passes where an API key is needed; the API key never reaches control.
    expect((await new OpenAI({ baseURL: `${keyed().http}/v1`, apiKey: ADMIN, maxRetries: 0 }).models.list()).data.map((m) => m.id)).toEqual(['qwen3']);
    expect((await sdk.models.list()).data).toHaveLength(1);
  });

  it('answers a refused client before reading its body', async () => {
    // Headers promise 64 MiB; only a few bytes are ever sent, so only an answer given before the body can arrive.
    const status = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(`${keyed().http}/v2/models/qwen3/infer`, { method: 'POST', headers: { 'content-length': String(64 * 1024 * 1024) } });
      request.on('response', (response) => {
        resolve(response.statusCode ?? 0);
        request.destroy();
      });
      request.on('error', reject);
      request.write('{"inputs"');
    });
    expect(status).toBe(401);
  });

  it('answers a CORS preflight without a key and puts the CORS headers on a refusal', async () => {
    const preflight = await fetch(`${keyed().http}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(204);
    const refused = await fetch(`${keyed().http}/v1/models`, { headers: { origin: ORIGIN } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(ORIGIN);
  });

  it('refuses a gRPC unload with the API key before the handler runs', async () => {
    const method = grpcMethods().find(([path]) => path.endsWith('/RepositoryModelUnload'))![1];
    const client = new grpc.Client(keyed().grpcAddress, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${API}`);
    const error = await new Promise<grpc.ServiceError | null>((resolve) =>
      client.makeUnaryRequest(method.path, method.requestSerialize, method.responseDeserialize, { model_name: 'qwen3' }, metadata, (e) => resolve(e)),
    );
    client.close();
    expect(error).toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: expect.stringContaining('admin key') });
    expect(keyed().service.modelReady('qwen3')).toBe(true);
  });
});
