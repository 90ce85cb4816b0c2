// Failures after a stream has started, which the real tiny model cannot be made to produce on
// demand: a generation that fails after its first event. SSE must keep its 200 and send an
// {"error"} event; the WebSocket must send an error for that id only; a model that fails before
// its first event gets a plain JSON error with the catalog's status.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { InferenceService } from '../../../../src/contracts/inference-service.js';
import type { GenerationEvent } from '../../../../src/contracts/text-generation.js';
import { ConveyorError } from '../../../../src/errors.js';
import type { LlmLookup } from '../../../../src/server/generation/lookup.js';
import { createHttpApp } from '../../../../src/main.js';
import { AccessPolicy } from '../../../../src/security/access-policy.js';
import type { LlmModel } from '../../../../src/serving/llm-backend.js';
import type { TritonLlmRequest } from '../../../../src/triton-llm/request.js';
import { tritonLlmResponses } from '../../../../src/triton-llm/responses.js';

function event(text: string, finishReason: GenerationEvent['finishReason'] = null): GenerationEvent {
  return {
    text,
    tokenIds: [7],
    logprobs: null,
    finishReason,
    stopReason: null,
    usage: { promptTokens: 3, completionTokens: 1, cachedTokens: 0 },
    timings: { arrivalMs: 0, scheduledMs: 0, firstTokenMs: 0, tokenMs: 0 },
  };
}

/** 'late' fails after one event, 'early' before any, 'ok' finishes. */
function fakeModel(name: string): LlmModel {
  return {
    name,
    version: 1,
    // A model that is not closing: its streams' writes wait on the client as long as it takes.
    closing: new AbortController().signal,
    undeliveredOutputTimeoutMs: 5000,
    prepare: () => ({}),
    async *generate() {
      if (name === 'early') throw new ConveyorError('UNAVAILABLE', 'the engine is not running');
      yield event('Hel');
      if (name === 'late') throw new ConveyorError('INTERNAL', 'engine worker exited (1)');
      yield event('lo', 'length');
    },
    // Triton's shaping of those events, as the real model does it.
    tritonGenerate(request: TritonLlmRequest) {
      return tritonLlmResponses(request, { model: name, version: '1' }, (this as unknown as LlmModel).generate({} as never));
    },
  } as unknown as LlmModel;
}

const lookup: LlmLookup = { llmModel: (name) => fakeModel(name) };
let app: FastifyInstance;

beforeAll(async () => {
  app = createHttpApp({} as InferenceService, { llm: lookup });
  await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => app?.close());

const generateStream = (model: string) => app.inject({ method: 'POST', url: `/v2/models/${model}/generate_stream`, payload: JSON.stringify({ text_input: 'x', stream: true }) });

describe('failures after a stream started', () => {
  it('SSE keeps its 200 and reports a later failure as an {"error"} event', async () => {
    const response = await generateStream('late');
    expect(response.statusCode).toBe(200);
    expect(response.payload).toBe('data: {"model_name":"late","model_version":"1","text_output":"Hel"}\n\ndata: {"error":"engine worker exited (1)"}\n\n');
  });

  it('SSE answers a failure before the first event with a plain JSON error', async () => {
    const response = await generateStream('early');
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({ error: 'the engine is not running' });
  });

  it('the WebSocket reports a failure for its id and keeps serving the others', async () => {
    const socket = new WebSocket(`ws://127.0.0.1:${(app.server.address() as { port: number }).port}/v1/ws`);
    await new Promise((resolve) => socket.once('open', resolve));
    const messages: Record<string, unknown>[] = [];
    const settled = new Promise<void>((resolve) =>
      socket.on('message', (data) => {
        messages.push(JSON.parse(String(data)) as Record<string, unknown>);
        if (messages.filter((m) => m['type'] !== 'delta').length === 2) resolve();
      }),
    );
    socket.send(JSON.stringify({ type: 'generate', id: 'a', model: 'late', prompt: 'x' }));
    socket.send(JSON.stringify({ type: 'generate', id: 'b', model: 'ok', prompt: 'x' }));
    await settled;
    socket.terminate();
    expect(messages.filter((m) => m['id'] === 'a').map((m) => m['type'])).toEqual(['delta', 'error']);
    expect(messages.find((m) => m['id'] === 'a' && m['type'] === 'error')).toMatchObject({ error: { message: 'engine worker exited (1)', type: 'server_error', code: 'internal', param: null } });
    expect(messages.filter((m) => m['id'] === 'b').map((m) => m['type'])).toEqual(['delta', 'delta', 'done']);
  });
});

describe('the WebSocket upgrade check', () => {
  it('refuses the upgrade without a key (401) and lets a keyed request through and lets a good request through', async () => {
    const guarded = createHttpApp({} as InferenceService, {
      llm: lookup,
      access: new AccessPolicy({ apiKeys: ['k'], adminKeys: [], authHealth: false, authMetrics: false }),
    });
    await guarded.listen({ host: '127.0.0.1', port: 0 });
    const address = `ws://127.0.0.1:${(guarded.server.address() as { port: number }).port}/v1/ws`;
    const refused = new WebSocket(address);
    const status = await new Promise<number>((resolve) => refused.on('unexpected-response', (_request, response) => resolve(response.statusCode!)));
    expect(status).toBe(401);
    const accepted = new WebSocket(address, { headers: { authorization: 'Bearer k' } });
    await new Promise((resolve, reject) => accepted.once('open', resolve).once('error', reject));
    accepted.close();
    await guarded.close();
  });
});
