// streamChoices' framing decisions without a model: a failure before the first chunk is a plain
// HTTP error (with its headers), a failure after it is an `error` event followed by [DONE], and
// an engine-side abort the client did not ask for is reported, never passed off as a finish.
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { OpenAIRequestError } from '../../../openai-compat/errors.js';
import type { ChoiceEvent } from '../../../src/server/kit/choices.js';
import { streamChoices } from '../../../openai-compat/respond.js';
import { UsageTally } from '../../../openai-compat/wire.js';
import type { GenerationEvent } from '../../../src/contracts/text-generation.js';
import type { FinishReason } from '../../../src/contracts/generate.js';

const event = (text: string, finishReason: FinishReason | null = null): GenerationEvent => ({
  text,
  tokenIds: [1],
  logprobs: null,
  finishReason,
  stopReason: null,
  usage: { promptTokens: 3, completionTokens: 1, cachedTokens: 0 },
  timings: { arrivalMs: 0, scheduledMs: 0, firstTokenMs: 0, tokenMs: 0 },
});

async function respond(events: () => AsyncGenerator<ChoiceEvent>) {
  const app = Fastify();
  app.post('/', async (_request, reply) => {
    await streamChoices(reply, events(), {
      meta: { id: 'cmpl-1', created: 1, model: 'm', system_fingerprint: 'fp_x' },
      head: 'text_completion',
      includeUsage: false,
      usage: new UsageTally(1),
      choice: (index, e) => ({ index, text: e.text, logprobs: null, finish_reason: e.finishReason }),
    });
    return reply;
  });
  const response = await app.inject({ method: 'POST', url: '/', payload: {} });
  await app.close();
  return response;
}

describe('streamChoices', () => {
  it('ends a normal stream with [DONE]', async () => {
    const response = await respond(async function* () {
      yield { index: 0, event: event('a') };
      yield { index: 0, event: event('b', 'stop') };
    });
    expect(response.statusCode).toBe(200);
    expect(
      response.body
        .split('\n\n')
        .filter(Boolean)
        .map((f) => JSON.parse(f.slice(6) === '[DONE]' ? '"DONE"' : f.slice(6))),
    ).toEqual([
      expect.objectContaining({ choices: [{ index: 0, text: 'a', logprobs: null, finish_reason: null }] }),
      expect.objectContaining({ choices: [{ index: 0, text: 'b', logprobs: null, finish_reason: 'stop' }] }),
      'DONE',
    ]);
  });

  it('answers a failure before the first chunk as a plain HTTP error with its headers', async () => {
    // biome-ignore lint/correctness/useYield: a stream that fails before its first chunk is the case under test
    const response = await respond(async function* () {
      throw new OpenAIRequestError('UNAVAILABLE', 'busy', undefined, 'service_unavailable', { 'retry-after': '1' });
    });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.json()).toEqual({ error: { message: 'busy', type: 'server_error', param: null, code: 'service_unavailable' } });
  });

  it('reports a failure mid-stream as an error event, then [DONE]', async () => {
    const response = await respond(async function* () {
      yield { index: 0, event: event('a') };
      yield { index: 0, event: event('', 'abort') };
    });
    expect(response.statusCode).toBe(200);
    const frames = response.body.split('\n\n').filter(Boolean);
    expect(frames).toHaveLength(3);
    expect(JSON.parse(frames[1]!.slice(6))).toEqual({ error: { message: expect.stringContaining('aborted by the server'), type: 'server_error', param: null, code: 'service_unavailable' } });
    expect(frames[2]).toBe('data: [DONE]');
  });
});
