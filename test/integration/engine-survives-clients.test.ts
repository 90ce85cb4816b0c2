// The reported engine killer, end to end with the official openai SDK: stop strings that end
// requests while the next step is already running (8 concurrent completions with stop
// ["e","a","o"," "], several rounds), and streaming clients that hang up mid-stream. Before the
// step contract this left the engine dead after the second round. Afterwards every request was
// answered, the engine is alive, no block is held, and greedy output is what it was.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let model: LlmModel;
let client: OpenAI;

beforeAll(async () => {
  // A small token budget: prompts prefill in chunks beside running decodes, the mixed steps
  // during which an abort used to break the engine.
  const config = configOf('qwen3-tiny', 'qwen3', (text) => text.replace('string_value: "512"', 'string_value: "24"'));
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config }]);
  server = await startTestServer(repository);
  model = server.service.llmModel('qwen3');
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 120_000);
afterAll(async () => server?.stop());

/** Resolves once no generation is left and every block is back (prefix-cached blocks count as free). */
function settled(): Promise<void> {
  const idle = () => model.engine.numActive === 0 && model.engine.stats?.numRunning === 0 && model.engine.stats.numWaiting === 0 && model.engine.stats.kvCacheUsage === 0;
  if (idle()) return Promise.resolve();
  return new Promise((resolve) => model.engine.onStep(() => idle() && resolve()));
}

const greedyProbe = () => client.completions.create({ model: 'qwen3', prompt: 'The probe prompt', max_tokens: 12, temperature: 0, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming);

describe('the engine survives its clients', () => {
  it('stop strings ending requests mid-step, round after round', async () => {
    const before = (await greedyProbe()).choices[0]!.text;
    for (let round = 0; round < 4; round++) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          client.completions.create({
            model: 'qwen3',
            prompt: `Round ${round} request ${i}: ${'tell me something '.repeat(1 + i)}`,
            max_tokens: 24,
            temperature: 0.8,
            seed: round * 8 + i,
            stop: ['e', 'a', 'o', ' '],
          }),
        ),
      );
      for (const answer of answers) expect(['stop', 'length']).toContain(answer.choices[0]!.finish_reason);
      expect(answers.some((a) => a.choices[0]!.finish_reason === 'stop')).toBe(true);
    }
    await settled();
    expect(model.engine.alive).toBe(true);
    expect((await greedyProbe()).choices[0]!.text).toBe(before);
  });

  it('streaming clients that hang up after a few chunks, while others keep streaming', async () => {
    const before = (await greedyProbe()).choices[0]!.text;
    const hangUps = Array.from({ length: 8 }, async (_, i) => {
      const controller = new AbortController();
      const stream = await client.chat.completions.create(
        { model: 'qwen3', messages: [{ role: 'user', content: `Hang up ${i}` }], max_tokens: 64, stream: true, ignore_eos: true } as OpenAI.ChatCompletionCreateParamsStreaming,
        { signal: controller.signal },
      );
      let chunks = 0;
      try {
        for await (const _ of stream) if (++chunks === 1 + (i % 4)) controller.abort();
      } catch (error) {
        expect((error as Error).name).toMatch(/Abort/);
      }
      expect(chunks).toBe(1 + (i % 4));
    });
    const finishers = Array.from({ length: 4 }, (_, i) =>
      client.chat.completions.create({ model: 'qwen3', messages: [{ role: 'user', content: `Finish ${i}` }], max_tokens: 16, ignore_eos: true } as OpenAI.ChatCompletionCreateParamsNonStreaming),
    );
    await Promise.all(hangUps);
    for (const answer of await Promise.all(finishers)) expect(answer.usage!.completion_tokens).toBe(16);
    await settled();
    expect(model.engine.alive).toBe(true);
    expect((await greedyProbe()).choices[0]!.text).toBe(before);
  });
});
