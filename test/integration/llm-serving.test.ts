// The "llm" backend in the real server: text in, text events out, through the input processor,
// the engine worker and the output processor, with the real Qwen3 tokenizer.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { GenerationEvent } from '../../src/contracts/text-generation.js';
import type { GenerateInput, LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let model: LlmModel;

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  server = await startTestServer(repository);
  model = server.manager.resolve('qwen3') as LlmModel;
}, 120_000);
afterAll(async () => server?.stop());

async function run(input: GenerateInput, signal?: AbortSignal): Promise<{ text: string; events: GenerationEvent[] }> {
  const events: GenerationEvent[] = [];
  for await (const event of model.generate(await model.prepare(input), signal)) events.push(event);
  return { text: events.map((e) => e.text).join(''), events };
}
const chat = (content: string) => ({ kind: 'chat' as const, messages: [{ role: 'user' as const, content }] });

describe('LLM serving (qwen3-tiny)', () => {
  it('is READY in the repository and refuses the classic infer path', async () => {
    expect((await fetch(`${server.http}/v2/models/qwen3/ready`)).status).toBe(200);
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(200);
    await expect(model.infer({ model: 'qwen3', parameters: {}, inputs: [] })).rejects.toMatchObject({ code: 'UNSUPPORTED' });
  });

  it('streams text whose concatenation is the decoded greedy output, with usage', async () => {
    const { text, events } = await run({ prompt: chat('Hello!'), sampling: { max_tokens: 16, ignore_eos: true, temperature: 0 } });
    const tokens = events.flatMap((e) => e.tokenIds);
    expect(tokens).toHaveLength(16);
    // Random weights emit arbitrary byte tokens, so the text may hold U+FFFD where the bytes are
    // invalid; the streamed deltas must still add up to exactly the full decode.
    expect(text).toBe(model.processor.tokenizer.decode(tokens, { skip_special_tokens: true }));
    const last = events.at(-1)!;
    expect(last.finishReason).toBe('length');
    expect(last.usage.completionTokens).toBe(16);
    expect(last.usage.promptTokens).toBeGreaterThan(5);
    expect(last.timings.firstTokenMs).toBeGreaterThanOrEqual(last.timings.arrivalMs);
  });

  it('gives a seeded sampled request the same text alone and inside a busy batch', async () => {
    const seeded = { prompt: chat('Tell me a story'), sampling: { max_tokens: 20, temperature: 1, top_p: 0.9, seed: 1234, ignore_eos: true } };
    const alone = await run(seeded);
    const noise = Array.from({ length: 5 }, (_, i) => run({ prompt: chat(`noise ${i}`), sampling: { max_tokens: 25, temperature: 1, ignore_eos: true } }));
    const [busy] = await Promise.all([run(seeded), ...noise]);
    expect(busy!.events.flatMap((e) => e.tokenIds)).toEqual(alone.events.flatMap((e) => e.tokenIds));
  });

  it('stops on a stop string that spans tokens, without emitting it', async () => {
    const sampling = { max_tokens: 24, ignore_eos: true, temperature: 0 };
    const free = await run({ prompt: chat('abc'), sampling });
    const tokens = free.events.flatMap((e) => e.tokenIds);
    const decode = (ids: number[]) => model.processor.tokenizer.decode(ids, { skip_special_tokens: true });
    // A two-character stop string whose first occurrence straddles a token boundary.
    let stop: string | undefined;
    for (let k = 2; k < tokens.length - 1 && !stop; k++) {
      const boundary = decode(tokens.slice(0, k)).length;
      const candidate = free.text.slice(boundary - 1, boundary + 1);
      if (candidate.length === 2 && !candidate.includes('\uFFFD') && free.text.indexOf(candidate) === boundary - 1) stop = candidate;
    }
    expect(stop).toBeDefined();
    const stopped = await run({ prompt: chat('abc'), sampling: { ...sampling, stop: [stop!] } });
    expect(stopped.events.at(-1)!.finishReason).toBe('stop');
    expect(stopped.events.at(-1)!.stopReason).toBe(stop);
    expect(stopped.text).toBe(free.text.slice(0, free.text.indexOf(stop!)));
  });

  it('aborting mid-generation frees the blocks within a step', async () => {
    const controller = new AbortController();
    const events: GenerationEvent[] = [];
    const generation = (async () => {
      for await (const event of model.generate(await model.prepare({ prompt: chat('long'), sampling: { max_tokens: 1000, ignore_eos: true } }), controller.signal)) {
        events.push(event);
        if (events.length === 5) controller.abort();
      }
    })();
    await generation;
    expect(events.at(-1)!.finishReason).toBe('abort');
    await vi.waitFor(
      () => {
        expect(model.engine.stats!.kvCacheUsage).toBe(0);
        expect(model.engine.numActive).toBe(0);
      },
      { timeout: 15_000, interval: 10 },
    );
  });

  it('exports vLLM-style metrics for the generations it served', async () => {
    await run({ prompt: chat('metrics'), sampling: { max_tokens: 8, ignore_eos: true, temperature: 0 } });
    const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? NaN);
    expect(value(/^conveyor:generation_tokens_total\{model_name="qwen3"\} (\d+)/m)).toBeGreaterThanOrEqual(8);
    expect(value(/^conveyor:time_to_first_token_seconds_count\{model_name="qwen3"\} (\d+)/m)).toBeGreaterThanOrEqual(1);
    expect(value(/^conveyor:request_success_total\{[^}]*finished_reason="length"[^}]*\} (\d+)/m)).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^conveyor:kv_cache_usage_perc\{model_name="qwen3"\} /m);
  });

  it.each([
    ['a negative temperature', { temperature: -1 }, /temperature/],
    ['top_p outside (0, 1]', { top_p: 1.5 }, /top_p/],
    ['an unknown token id in logit_bias', { logit_bias: { '999999999': 5 } }, /logit_bias/],
    ['max_tokens beyond the context', { max_tokens: 10_000_000 }, /max_tokens|context/],
  ])('rejects %s before scheduling anything', async (_, sampling, message) => {
    await expect(model.prepare({ prompt: chat('x'), sampling })).rejects.toThrow(message);
  });

  it('rejects a prompt longer than the context with context_length_exceeded', async () => {
    const long = Array.from({ length: 5000 }, (_, i) => (i % 1000) + 10);
    await expect(model.prepare({ prompt: { kind: 'tokens', tokenIds: long } })).rejects.toMatchObject({ code: 'CONTEXT_LENGTH_EXCEEDED' });
  });
});
