// Triton's generate extension on the LLM against the real server, with plain fetch:
// /generate (one JSON response) and /generate_stream (SSE frames), errors before and after the
// status line, and a client that disconnects mid-stream.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { cancelledCount, engineOutput, expectAbortedAndIdle, GREEDY, LLM, startLlmServer } from '../support/generation.js';
import type { TestServer } from '../support/server.js';

let server: TestServer;
let model: LlmModel;

beforeAll(async () => {
  ({ server, model } = await startLlmServer());
}, 120_000);
afterAll(async () => server?.stop());

const PROMPT = 'Once upon a time';
const url = (suffix: string, model = LLM) => `${server.http}/v2/models/${model}/${suffix}`;
const post = (suffix: string, body: unknown, model = LLM) => fetch(url(suffix, model), { method: 'POST', body: JSON.stringify(body) });
const greedy = (maxTokens: number) => ({ temperature: 0, ignore_eos: true, max_tokens: maxTokens });

/** The `data:` payloads of an SSE body, checking the framing byte by byte. */
function sseEvents(body: string): unknown[] {
  expect(body.endsWith('\n\n')).toBe(true);
  return body
    .slice(0, -2)
    .split('\n\n')
    .map((frame) => {
      expect(frame.startsWith('data: ')).toBe(true);
      expect(frame.slice(6)).not.toContain('\n');
      return JSON.parse(frame.slice(6));
    });
}

describe('Triton generate extension', () => {
  it('/generate answers one JSON object: the prompt followed by the engine’s greedy text', async () => {
    const response = await post('generate', { id: 'g1', text_input: PROMPT, parameters: greedy(10) });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const expected = await engineOutput(model, { prompt: { kind: 'text', text: PROMPT }, sampling: { ...GREEDY, max_tokens: 10 } });
    expect(await response.json()).toEqual({ id: 'g1', model_name: LLM, model_version: '1', text_output: PROMPT + expected.text });
  });

  it('maps top-level keys to inputs (max_tokens, exclude_input_in_output, return_*) and honours versions', async () => {
    const body = {
      text_input: PROMPT,
      max_tokens: 6,
      exclude_input_in_output: true,
      return_finish_reason: true,
      return_num_input_tokens: true,
      return_num_output_tokens: true,
      parameters: { temperature: 0, ignore_eos: true, max_tokens: 99 },
    };
    const response = await fetch(`${server.http}/v2/models/${LLM}/versions/1/generate`, { method: 'POST', body: JSON.stringify(body) });
    const expected = await engineOutput(model, { prompt: { kind: 'text', text: PROMPT }, sampling: { ...GREEDY, max_tokens: 6 } });
    expect(await response.json()).toEqual({
      model_name: LLM,
      model_version: '1',
      text_output: expected.text,
      finish_reason: 'length',
      num_input_tokens: expected.promptTokens,
      num_output_tokens: 6,
    });
  });

  it('/generate_stream sends one SSE data frame per step whose texts add up to the greedy output', async () => {
    const response = await post('generate_stream', { text_input: PROMPT, stream: true, parameters: greedy(10) });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = sseEvents(await response.text()) as { text_output: string; model_name: string }[];
    const expected = await engineOutput(model, { prompt: { kind: 'text', text: PROMPT }, sampling: { ...GREEDY, max_tokens: 10 } });
    expect(events.length).toBeGreaterThan(2);
    expect(events.every((e) => e.model_name === LLM)).toBe(true);
    expect(events.map((e) => e.text_output).join('')).toBe(expected.text);
  });

  it('/generate_stream with stream false sends the whole answer as one event; stream may also come in parameters', async () => {
    const whole = sseEvents(await (await post('generate_stream', { text_input: PROMPT, parameters: greedy(5) })).text());
    expect(whole).toHaveLength(1);
    const steps = sseEvents(await (await post('generate_stream', { text_input: PROMPT, parameters: { ...greedy(5), stream: true } })).text());
    expect(steps.length).toBeGreaterThan(1);
    expect((whole[0] as { text_output: string }).text_output).toBe(PROMPT + steps.map((e) => (e as { text_output: string }).text_output).join(''));
  });

  it('refuses a request before inference starts with a JSON error and the catalog’s status', async () => {
    const cases: [string, unknown, number, RegExp][] = [
      ['generate', { text_input: PROMPT, parameters: { temperature: -1 } }, 400, /temperature/],
      ['generate_stream', { text_input: PROMPT, parameters: { temperature: -1 } }, 400, /temperature/],
      ['generate_stream', { parameters: {} }, 400, /text_input/],
      ['generate', { text_input: PROMPT, bogus: 1 }, 400, /bogus/],
      ['generate', { text_input: PROMPT, parameters: { best_of: 2 } }, 400, /best_of/],
      ['generate_stream', { text_input: PROMPT, stream: true, exclude_input_in_output: false }, 400, /exclude_input_in_output/],
      ['generate', { text_input: PROMPT, max_tokens: 10_000_000 }, 400, /context length/],
    ];
    for (const [suffix, body, status, message] of cases) {
      const response = await post(suffix, body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(((await response.json()) as { error: string }).error).toMatch(message);
    }
    const unknown = await post('generate', { text_input: PROMPT }, 'nope');
    expect(unknown.status).toBe(400);
    const version = await fetch(`${server.http}/v2/models/${LLM}/versions/7/generate`, { method: 'POST', body: JSON.stringify({ text_input: PROMPT }) });
    expect(version.status).toBe(404);
  });

  it('a client that disconnects mid-stream aborts the request and its blocks are returned', async () => {
    const cancelled = cancelledCount(model);
    // node:http rather than fetch: undici opens a fresh pooled connection after an abort, which
    // would hold the server's shutdown open until its exit timeout.
    const request = httpRequest(url('generate_stream'), { method: 'POST' });
    request.end(JSON.stringify({ text_input: PROMPT, stream: true, parameters: { max_tokens: 1000, ignore_eos: true } }));
    const response = await new Promise<IncomingMessage>((resolve) => request.once('response', resolve));
    expect(response.statusCode).toBe(200);
    await new Promise((resolve) => response.once('data', resolve));
    request.on('error', () => {}).destroy();
    await expectAbortedAndIdle(model, cancelled);
  });
});
