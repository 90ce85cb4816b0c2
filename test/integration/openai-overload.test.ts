// A burst against a server with a tiny queue (--max-queued-requests 2, one sequence at a time),
// sent by the official `openai` SDK with its default retries (2): the shed requests are told
// when to come back (retry-after / retry-after-ms from the measured drain rate, each with its
// own slot), so they return spread out instead of all at once. The test records every response
// the SDK saw through its `fetch` option.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const BURST = 24;
let server: TestServer;

beforeAll(async () => {
  const config = configOf('qwen3-tiny', 'qwen3', (t) => t.replace('string_value: "32"', 'string_value: "1"'));
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config }]);
  server = await startTestServer(repository, ['--max-queued-requests', '2']);
}, 120_000);
afterAll(async () => server?.stop());

interface Shed {
  readonly retryAfter: string | null;
  readonly retryAfterMs: string | null;
}

describe('overload retry-after', () => {
  it(`spreads the retries of a ${BURST}-request burst so the SDK's default retries get most of it through`, async () => {
    const shed: Shed[] = [];
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (response.status === 503) shed.push({ retryAfter: response.headers.get('retry-after'), retryAfterMs: response.headers.get('retry-after-ms') });
      return response;
    };
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', fetch: recording });
    const results = await Promise.allSettled(
      Array.from({ length: BURST }, () => client.completions.create({ model: 'qwen3', prompt: 'hello', max_tokens: 8, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming)),
    );
    const failed = results.filter((r) => r.status === 'rejected');
    console.log(`burst of ${BURST}: ${failed.length} failed after the SDK's retries; ${shed.length} responses were 503`);
    for (const failure of failed) expect((failure as PromiseRejectedResult).reason).toMatchObject({ status: 503 });
    expect(shed.length).toBeGreaterThan(0);
    for (const { retryAfter, retryAfterMs } of shed) {
      expect(Number.isInteger(Number(retryAfter)) && Number(retryAfter) >= 1).toBe(true);
      expect(Number(retryAfterMs)).toBeGreaterThan(0);
      expect(Number(retryAfterMs)).toBeLessThanOrEqual(60_000);
      expect(Number(retryAfter)).toBe(Math.max(1, Math.ceil(Number(retryAfterMs) / 1000)));
    }
    // Spread: the shed requests are not all told the same wait.
    expect(new Set(shed.map((s) => s.retryAfterMs)).size).toBeGreaterThan(shed.length / 2);
    expect(failed.length).toBeLessThan(BURST / 2);
  }, 180_000);
});
