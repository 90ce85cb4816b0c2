// Completions' echo + logprobs and vLLM's prompt_logprobs: prompt-token logprobs computed by the
// engine during prefill, compared with a direct full-sequence forward pass of the same ONNX model.
// The model prefills in chunks of 8 tokens (max_num_batched_tokens), so a prompt's logprobs cross
// chunk boundaries, and the prompt is first served once so its blocks sit in the prefix cache: a
// request wanting prompt logprobs must compute them anyway.
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { decoderShape, emptyCache, forward } from '../support/decoder.js';
import { configOf, makeRepository, startTestServer, type TestServer, withAttentionBackend } from '../support/server.js';

const TOLERANCE = 1e-3;
let server: TestServer;
let client: OpenAI;
let prompt: number[];
/** reference[i]: the model's log-softmax at position i − 1 (the distribution of token i). */
let reference: Float64Array[];

interface VllmLogprob {
  logprob: number;
  rank: number;
  decoded_token: string;
}
type VllmChoice = OpenAI.CompletionChoice & { prompt_logprobs?: (Record<string, VllmLogprob> | null)[] };

function logSoftmax(row: Float64Array, n: number): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < n; i++) max = Math.max(max, row[i]!);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(row[i]! - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(row.subarray(0, n), (v) => v - lse);
}

/** The k best ids of a row, best first. */
const topIds = (row: Float64Array, k: number): number[] => [...row.keys()].sort((a, b) => row[b]! - row[a]!).slice(0, k);

beforeAll(async () => {
  // The Optimum graph, named: ranks are compared exactly with its own forward pass below (another backend's float rounding can swap a near-tie).
  const config = configOf(
    'qwen3-tiny',
    'qwen3',
    withAttentionBackend('past_key_values', (t) => t.replace('key: "max_num_batched_tokens" value: { string_value: "512" }', 'key: "max_num_batched_tokens" value: { string_value: "8" }')),
  );
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config }]);
  server = await startTestServer(repository);
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
  const model = server.service.llmModel('qwen3');
  prompt = model.processor.tokenizer.encode('The quick brown fox jumps over the lazy dog while the cat watches from the warm windowsill', { add_special_tokens: false }).ids;
  const session = await ort.InferenceSession.create(join(DEFAULT_REPOSITORY, 'qwen3-tiny/1/onnx/model.onnx'), { intraOpNumThreads: 1 });
  const shape = decoderShape(session);
  const { logits, vocab } = await forward(session, emptyCache(shape, 1, ort), [prompt], [prompt.map(() => 1)], 0);
  const sampleable = model.processor.info.vocabSize;
  reference = prompt.map((_, i) => (i === 0 ? new Float64Array(0) : logSoftmax(logits[0]!.subarray((i - 1) * vocab, i * vocab), sampleable)));
  await session.release();
}, 120_000);
afterAll(async () => server?.stop());

describe('prompt logprobs', () => {
  it('echo + logprobs covers the prompt (first null) then the completion, matching a full forward pass', async () => {
    expect(prompt.length).toBeGreaterThan(17);
    // Serve the prompt once: its full blocks are now cached.
    await client.completions.create({ model: 'qwen3', prompt, max_tokens: 1, temperature: 0 });
    const response = await client.completions.create({ model: 'qwen3', prompt, echo: true, logprobs: 3, max_tokens: 3, temperature: 0, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming);
    const { logprobs, text } = response.choices[0]!;
    expect(logprobs).not.toBeNull();
    const lp = logprobs!;
    const tokens = lp.tokens!;
    expect(tokens).toHaveLength(prompt.length + 3);
    expect(lp.token_logprobs![0]).toBeNull();
    expect(lp.top_logprobs![0]).toBeNull();
    expect(lp.text_offset![0]).toBe(0);
    const decoder = server.service.llmModel('qwen3').processor.tokenizer;
    expect(text.startsWith(decoder.decode(prompt, { skip_special_tokens: false }))).toBe(true);
    for (let i = 1; i < prompt.length; i++) {
      expect(tokens[i]).toBe(decoder.decode([prompt[i]!], { skip_special_tokens: false }));
      expect(Math.abs(lp.token_logprobs![i]! - reference[i]![prompt[i]!]!)).toBeLessThan(TOLERANCE);
      const top = Object.values(lp.top_logprobs![i]!);
      const expected = topIds(reference[i]!, 3).map((id) => reference[i]![id]!);
      expect(top).toHaveLength(new Set(topIds(reference[i]!, 3).map((id) => decoder.decode([id], { skip_special_tokens: false }))).size);
      top.forEach((v, k) => expect(Math.abs(v - expected[k]!)).toBeLessThan(TOLERANCE));
      expect(lp.text_offset![i]).toBe(lp.text_offset![i - 1]! + tokens[i - 1]!.length);
    }
    // The completion's own tokens follow, with logprobs.
    for (let i = prompt.length; i < tokens.length; i++) expect(typeof lp.token_logprobs![i]).toBe('number');
    // The cached blocks were recomputed, not skipped, and usage counts the prompt once.
    expect(response.usage).toMatchObject({ prompt_tokens: prompt.length, completion_tokens: 3 });
  });

  it("returns vLLM's prompt_logprobs: the prompt token with its rank, then the top alternatives", async () => {
    const response = await client.completions.create({ model: 'qwen3', prompt, max_tokens: 1, temperature: 0, prompt_logprobs: 2 } as OpenAI.CompletionCreateParamsNonStreaming);
    const choice = response.choices[0] as VllmChoice;
    const list = choice.prompt_logprobs!;
    expect(list).toHaveLength(prompt.length);
    expect(list[0]).toBeNull();
    expect(choice.logprobs).toBeNull();
    for (let i = 1; i < prompt.length; i++) {
      const ref = reference[i]!;
      const own = list[i]![String(prompt[i])]!;
      expect(Math.abs(own.logprob - ref[prompt[i]!]!)).toBeLessThan(TOLERANCE);
      const rank = 1 + ref.filter((v) => v > ref[prompt[i]!]!).length;
      expect(own.rank).toBe(rank);
      for (const [k, id] of topIds(ref, 2).entries()) {
        const entry = list[i]![String(id)]!;
        expect(Math.abs(entry.logprob - ref[id]!)).toBeLessThan(TOLERANCE);
        if (id !== prompt[i]) expect(entry.rank).toBe(k + 1);
      }
      expect(Object.keys(list[i]!).length).toBeLessThanOrEqual(3);
    }
  });

  it('streams the echoed prompt and its logprobs in the first chunk', async () => {
    const stream = await client.completions.create({
      model: 'qwen3',
      prompt,
      echo: true,
      logprobs: 1,
      max_tokens: 2,
      temperature: 0,
      ignore_eos: true,
      stream: true,
    } as OpenAI.CompletionCreateParamsStreaming);
    const chunks: OpenAI.Completion[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const first = chunks[0]!.choices[0]!;
    expect(first.logprobs!.tokens!.length).toBeGreaterThanOrEqual(prompt.length);
    expect(first.logprobs!.token_logprobs![0]).toBeNull();
    expect(Math.abs(first.logprobs!.token_logprobs![1]! - reference[1]![prompt[1]!]!)).toBeLessThan(TOLERANCE);
    const tokens = chunks.flatMap((c) => c.choices.flatMap((ch) => ch.logprobs?.tokens ?? []));
    expect(tokens).toHaveLength(prompt.length + 2);
  });

  it('refuses prompt_logprobs on chat and out-of-range values by name', async () => {
    await expect(
      client.chat.completions.create({ model: 'qwen3', messages: [{ role: 'user', content: 'hi' }], prompt_logprobs: 1 } as OpenAI.ChatCompletionCreateParamsNonStreaming),
    ).rejects.toMatchObject({ status: 400, param: 'prompt_logprobs' });
    await expect(client.completions.create({ model: 'qwen3', prompt: 'hi', prompt_logprobs: 99 } as OpenAI.CompletionCreateParamsNonStreaming)).rejects.toMatchObject({
      status: 400,
      param: 'prompt_logprobs',
    });
    const engine = server.service.llmModel('qwen3').engine;
    expect(engine.numActive).toBe(0);
  });
});
