// vLLM's x-vllm-priority header (and gRPC metadata of the same name) sets a request's scheduling
// priority on every route that takes it, winning over the body's `priority`: the engine's
// requests are recorded as submitted. A malformed value is refused naming the header.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { GenerateRequest } from '../../src/contracts/generate.js';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { LLM, startLlmServer } from '../support/generation.js';
import type { TestServer } from '../support/server.js';

let server: TestServer;
let model: LlmModel;
const submitted: GenerateRequest[] = [];

beforeAll(async () => {
  ({ server, model } = await startLlmServer());
  const submit = model.engine.submit.bind(model.engine);
  vi.spyOn(model.engine, 'submit').mockImplementation((request) => {
    submitted.push(request);
    return submit(request);
  });
}, 120_000);
afterAll(async () => server?.stop());

const SHORT = { max_tokens: 1 };

async function post(path: string, body: object, priority?: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(priority === undefined ? {} : { 'x-vllm-priority': priority }) };
  return fetch(`${server.http}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
}

/** The priority the engine saw for the request `send` makes. */
async function priorityOf(send: () => Promise<unknown>): Promise<number> {
  const before = submitted.length;
  await send();
  expect(submitted.length).toBe(before + 1);
  return submitted.at(-1)!.priority;
}

describe('x-vllm-priority', () => {
  it('sets the priority on the OpenAI, Responses, Anthropic and Triton generate routes, over the body field', async () => {
    const chat = { model: LLM, messages: [{ role: 'user', content: 'Hi' }], ...SHORT };
    expect(await priorityOf(async () => expect((await post('/v1/chat/completions', { ...chat, priority: 3 }, '-5')).status).toBe(200))).toBe(-5);
    expect(await priorityOf(async () => expect((await post('/v1/chat/completions', { ...chat, priority: 3 })).status).toBe(200))).toBe(3);
    expect(await priorityOf(async () => expect((await post('/v1/completions', { model: LLM, prompt: 'Hi', ...SHORT }, '7')).status).toBe(200))).toBe(7);
    expect(await priorityOf(async () => expect((await post('/v1/responses', { model: LLM, input: 'Hi', max_output_tokens: 1 }, '2')).status).toBe(200))).toBe(2);
    expect(await priorityOf(async () => expect((await post('/v1/messages', { model: LLM, max_tokens: 1, messages: [{ role: 'user', content: 'Hi' }] }, '4')).status).toBe(200))).toBe(4);
    expect(await priorityOf(async () => expect((await post(`/v2/models/${LLM}/generate`, { text_input: 'Hi', parameters: SHORT }, '9')).status).toBe(200))).toBe(9);
  });

  it('refuses a value that is not an integer, naming the header', async () => {
    const response = await post('/v1/chat/completions', { model: LLM, messages: [{ role: 'user', content: 'Hi' }], ...SHORT }, 'high');
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { param: 'x-vllm-priority' } });
  });

  it('is read from gRPC Generate metadata', async () => {
    const definition = loadSync(['generate.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [join(import.meta.dirname, '..', '..', 'protos')] });
    const root = grpc.loadPackageDefinition(definition) as unknown as { conveyor: { v1: { GenerationService: new (...a: unknown[]) => grpc.Client & Record<string, (...a: unknown[]) => unknown> } } };
    const client = new root.conveyor.v1.GenerationService(server.grpcAddress, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set('x-vllm-priority', '-2');
    const priority = await priorityOf(
      () =>
        new Promise<void>((resolve, reject) => {
          const call = client['Generate']!({ model: LLM, request_id: 'p', text: 'Hi', sampling: SHORT }, metadata) as grpc.ClientReadableStream<unknown>;
          call.on('data', () => undefined);
          call.on('error', reject);
          call.on('end', resolve);
        }),
    );
    expect(priority).toBe(-2);
    client.close();
  });
});
