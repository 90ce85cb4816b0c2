// The naive baseline server on the tiny decoder, in-process: its greedy tokens are the reference
// greedy loop's, it streams the OpenAI completions format the benchmark client reads (one chunk
// per token, the usage chunk, [DONE]), and it serves concurrent requests one after the other.
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendCompletion } from '../../../bench/scenarios/serve/client.js';
import { loadNaiveModel, naiveServer, type NaiveModel } from '../../../bench/scenarios/serve/naive-server.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { greedy } from '../../support/decoder.js';

const DIR = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
let model: NaiveModel;
let server: ReturnType<typeof naiveServer>;
let baseUrl: string;

beforeAll(async () => {
  model = await loadNaiveModel(DIR, 'tiny', 1);
  server = naiveServer(model);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await model?.decoder.release();
});

describe('naive server', () => {
  it('streams the reference greedy continuation, one chunk per token, then usage and [DONE]', async () => {
    const prompt = 'The quick brown fox';
    const ids = model.tokenizer.encode(prompt, { add_special_tokens: true }).ids;
    const session = await ort.InferenceSession.create(join(DIR, 'onnx', 'model.onnx'), { intraOpNumThreads: 1, logSeverityLevel: 3 });
    const expected = await greedy(session, ort, ids, 6);
    await session.release();

    const response = await fetch(`${baseUrl}/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'tiny', prompt, max_tokens: 6, stream: true, stream_options: { include_usage: true }, ignore_eos: true }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const events = (await response.text()).split('\n\n').filter((e) => e !== '');
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)) as { choices: { text: string; finish_reason: string | null }[]; usage?: object });
    expect(chunks).toHaveLength(7);
    expect(chunks.slice(0, 6).map((c) => c.choices[0]!.finish_reason)).toEqual([null, null, null, null, null, 'length']);
    expect(
      chunks
        .slice(0, 6)
        .map((c) => c.choices[0]!.text)
        .join(''),
    ).toBe(model.tokenizer.decode(expected, { skip_special_tokens: true }));
    expect(chunks[6]).toMatchObject({ choices: [], usage: { prompt_tokens: ids.length, completion_tokens: 6, total_tokens: ids.length + 6 } });
  });

  it('serves concurrent requests one at a time, in arrival order', async () => {
    const target = { baseUrl, model: 'tiny' };
    const outputs = await Promise.all([0, 1, 2].map((i) => sendCompletion(target, { prompt: `request ${i}`, promptLen: 3, outputLen: 5 })));
    for (const o of outputs) expect(o).toMatchObject({ success: true, outputTokens: 5 });
    // Each starts streaming only after the one before it has finished.
    const spans = outputs.map((o) => ({ first: o.startMs + o.ttftMs, last: o.startMs + o.latencyMs }));
    expect(spans[1]!.first).toBeGreaterThanOrEqual(spans[0]!.last);
    expect(spans[2]!.first).toBeGreaterThanOrEqual(spans[1]!.last);
  });

  it('answers a bad request with an OpenAI error body', async () => {
    const response = await fetch(`${baseUrl}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: '', max_tokens: 2 }) });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error', param: null, code: null } });
  });
});
