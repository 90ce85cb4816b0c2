// session.run blocks the thread it runs on, so ONNX Runtime belongs to the worker threads: the
// running server's main thread (this test file's own process: integration files are isolated)
// serves a classic model and an LLM, and its module cache never holds onnxruntime-node. The
// architecture test holds the same rule over the import graph.
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') },
    { name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') },
  ]);
  server = await startTestServer(repository);
});
afterAll(async () => server?.stop());

const post = (path: string, body: unknown) => fetch(`${server.http}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const loadedPackages = (): string[] => Object.keys(createRequire(import.meta.url).cache).flatMap((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1] ?? []);

describe('the main thread', () => {
  it('serves a classic model and an LLM without loading onnxruntime-node', async () => {
    const data = { input_ids: [101, 102], attention_mask: [1, 1], token_type_ids: [0, 0] };
    const inputs = Object.entries(data).map(([name, values]) => ({ name, datatype: 'INT64', shape: [1, 2], data: values }));
    expect((await post('/v2/models/bert/infer', { inputs })).status).toBe(200);
    expect((await post('/v1/chat/completions', { model: 'qwen3', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 })).status).toBe(200);

    const packages = new Set(loadedPackages());
    // The probe sees the CommonJS packages the main thread does load.
    expect(packages).toContain('fastify');
    expect(packages).toContain('@grpc/grpc-js');
    expect([...packages].filter((p) => p.startsWith('onnxruntime'))).toEqual([]);
  });
});
