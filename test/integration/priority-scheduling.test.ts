// The scheduling_policy engine parameter end to end, through the official openai SDK's requests
// with vLLM's `priority` field, on a real server whose tiny LLM runs one sequence at a time
// (max_num_seqs 1). One long request holds the seat while others queue with different
// priorities; when it is cancelled, the engine's own step messages tell the order in which the
// queued requests got their first token: by priority under `priority`, by arrival under `fcfs`.
// Under `priority` a more important newcomer preempts the running request; under `fcfs` it waits.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StepOutput } from '../../src/contracts/generate.js';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let client: OpenAI;

/** The default tiny LLM's config, one sequence at a time, with `scheduling_policy` set. */
const llmConfig = (name: string, policy: string): string =>
  configOf('qwen3-tiny', name, (text) => {
    const oneSeat = text.replace('key: "max_num_seqs" value: { string_value: "32" }', 'key: "max_num_seqs" value: { string_value: "1" }');
    expect(oneSeat).not.toBe(text);
    return `${oneSeat}parameters: { key: "scheduling_policy" value: { string_value: "${policy}" } }\n`;
  });

beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'by-priority', from: 'qwen3-tiny', config: llmConfig('by-priority', 'priority') },
    { name: 'by-arrival', from: 'qwen3-tiny', config: llmConfig('by-arrival', 'fcfs') },
    { name: 'lottery', from: 'qwen3-tiny', config: llmConfig('lottery', 'lottery') },
  ]);
  server = await startTestServer(repository, ['--strict-readiness', 'false']);
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 180_000);
afterAll(async () => server?.stop());

/** A prompt of `length` ordinary token ids: the length tells the requests apart in step messages. */
const prompt = (length: number): number[] => Array.from({ length }, (_, i) => 1000 + i);

/** Records, per engine request, its prompt length and the first step message that gave it a token. */
function firstTokens(model: LlmModel): { readonly order: number[]; readonly times: Map<number, { arrival: number; scheduled: number; firstToken: number }> } {
  const order: number[] = [];
  const times = new Map<number, { arrival: number; scheduled: number; firstToken: number }>();
  const seen = new Set<string>();
  model.engine.onStep((step: StepOutput) => {
    for (const u of step.updates) {
      if (u.newTokenIds.length === 0 || seen.has(u.requestId)) continue;
      seen.add(u.requestId);
      order.push(u.numPromptTokens);
      times.set(u.numPromptTokens, { arrival: u.arrivalTimeMs, scheduled: u.scheduledTimeMs!, firstToken: u.firstTokenTimeMs! });
    }
  });
  return { order, times };
}

/**
 * Starts a long streamed completion and resolves once its first chunk has arrived (the server
 * sends headers with the first token), so the engine's one seat is taken. Abort `controller` to
 * end it; `gone` settles when its stream has ended. 4000 tokens take this model tens of seconds
 * (logprobs on), far longer than queueing a few requests; finishing by itself fails the test.
 */
async function occupy(model: string, priority: number, controller: AbortController): Promise<{ readonly gone: Promise<void> }> {
  const stream = await client.completions.create({ model, prompt: prompt(1), max_tokens: 4000, ignore_eos: true, logprobs: 0, stream: true, priority } as OpenAI.CompletionCreateParamsStreaming, {
    signal: controller.signal,
  });
  const gone = (async () => {
    try {
      for await (const chunk of stream) if (chunk.choices[0]?.finish_reason) throw new Error(`the occupier finished by itself (${chunk.choices[0].finish_reason}) before the test ended it`);
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
  })();
  // Wrapped: an async function returning the promise itself would wait for it.
  return { gone };
}

const complete = (model: string, promptLength: number, priority: number) =>
  client.completions.create({ model, prompt: prompt(promptLength), max_tokens: 2, ignore_eos: true, priority } as OpenAI.CompletionCreateParamsNonStreaming);

/** Waits until the engine reports `count` waiting requests (stats arrive with every step the occupier runs). */
const waitingCount = (model: LlmModel, count: number) => vi.waitFor(() => expect(model.engine.stats?.numWaiting).toBe(count), { timeout: 60_000, interval: 10 });

describe('scheduling_policy', () => {
  // Queued one after another (each seen waiting before the next is sent): prompt length → priority.
  const queued = [
    { length: 2, priority: 3 },
    { length: 3, priority: 1 },
    { length: 4, priority: 2 },
  ];

  it.each([
    { name: 'by-priority', expected: [3, 4, 2] },
    { name: 'by-arrival', expected: [2, 3, 4] },
  ])(
    '$name: queued requests get their first token in the policy order',
    async ({ name, expected }) => {
      const model = server.service.llmModel(name);
      const record = firstTokens(model);
      const controller = new AbortController();
      // The occupier outranks every queued request, so it holds the seat under both policies.
      const occupied = await occupy(name, 0, controller);
      const answers = [];
      for (const [i, q] of queued.entries()) {
        answers.push(complete(name, q.length, q.priority));
        await waitingCount(model, i + 1);
      }
      expect(model.engine.stats).toMatchObject({ numRunning: 1, numWaiting: 3, numPreemptions: 0 });
      controller.abort();
      await occupied.gone;
      const done = await Promise.all(answers);
      expect(done.map((a) => a.usage?.prompt_tokens)).toEqual(queued.map((q) => q.length));
      expect(record.order).toEqual([1, ...expected]);
      expect(model.engine.stats?.numPreemptions).toBe(0);
      // One clock: arrivals in the order sent, and every queued request waited for the seat.
      const arrivals = queued.map((q) => record.times.get(q.length)!.arrival);
      expect([...arrivals].sort((x, y) => x - y)).toEqual(arrivals);
      for (const { length } of queued) {
        const t = record.times.get(length)!;
        expect(t.scheduled).toBeGreaterThan(t.arrival);
        expect(t.firstToken).toBeGreaterThanOrEqual(t.scheduled);
      }
    },
    120_000,
  );

  it('priority: a more important request preempts the running one and finishes while it waits', async () => {
    const model = server.service.llmModel('by-priority');
    const before = model.engine.stats!.numPreemptions;
    const controller = new AbortController();
    const occupied = await occupy('by-priority', 5, controller);
    const urgent = await complete('by-priority', 6, 0);
    expect(urgent.choices[0]!.finish_reason).toBe('length');
    // The occupier was put back to wait (recompute), so its stream is still open.
    expect(model.engine.stats!.numPreemptions).toBe(before + 1);
    expect(server.logs.some((line) => /preempted request .* outranks it \(priority 5\)/.test(line))).toBe(true);
    controller.abort();
    await occupied.gone;
  }, 120_000);

  it('fcfs: the same request waits for the running one instead', async () => {
    const model = server.service.llmModel('by-arrival');
    const record = firstTokens(model);
    const controller = new AbortController();
    const occupied = await occupy('by-arrival', 5, controller);
    const urgent = complete('by-arrival', 6, 0);
    await waitingCount(model, 1);
    controller.abort();
    await occupied.gone;
    expect((await urgent).choices[0]!.finish_reason).toBe('length');
    expect(record.order).toEqual([1, 6]);
    expect(model.engine.stats!.numPreemptions).toBe(0);
  }, 120_000);

  it('an unknown policy fails that model to load, naming the parameter', async () => {
    const index = await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST' })).json();
    const row = index.find((r: { name: string }) => r.name === 'lottery');
    expect(row.state).toBe('UNAVAILABLE');
    expect(row.reason).toContain("parameter scheduling_policy must be fcfs or priority, got 'lottery'");
    expect((await fetch(`${server.http}/v2/models/by-priority/ready`)).status).toBe(200);
  });
});
