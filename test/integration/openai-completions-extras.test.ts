// Completions' best_of (the best n of best_of candidates by cumulative logprob, usage over all)
// and suffix (fill-in-the-middle with the tokenizer's FIM tokens; a model without them is a 400
// naming the model and `suffix`), through the official `openai` SDK against the real server.
// The second model is the same decoder with its FIM tokens renamed in its tokenizer files.

import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI, { BadRequestError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let client: OpenAI;

/** qwen3-tiny/1 with `<|fim_…|>` renamed to `<|nofim_…|>` in tokenizer.json and tokenizer_config.json. */
async function addModelWithoutFim(root: string, name: string): Promise<void> {
  const source = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
  const version = join(root, name, '1');
  await mkdir(version, { recursive: true });
  await writeFile(join(root, name, 'config.pbtxt'), configOf('qwen3-tiny', name));
  for (const entry of await readdir(source)) {
    if (entry === 'tokenizer.json' || entry === 'tokenizer_config.json') {
      await writeFile(join(version, entry), (await readFile(join(source, entry), 'utf8')).replaceAll('<|fim_', '<|nofim_'));
    } else if (entry !== 'onnx') {
      await copyFile(join(source, entry), join(version, entry));
    }
  }
  // Model files may not lead outside their directory through a link: copies, the fp32 graph only.
  await mkdir(join(version, 'onnx'));
  await copyFile(join(source, 'onnx', 'model.onnx'), join(version, 'onnx', 'model.onnx'));
}

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  await addModelWithoutFim(repository, 'plain');
  server = await startTestServer(repository);
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 120_000);
afterAll(async () => server?.stop());

const sum = (values: readonly (number | null)[]): number => values.reduce<number>((a, v) => a + (v ?? 0), 0);

describe('best_of', () => {
  const base = { model: 'qwen3', prompt: 'Once upon a time', max_tokens: 6, temperature: 1, seed: 11 };

  it('returns the n best of best_of candidates by cumulative logprob, best first, and bills every candidate', async () => {
    // The same four seeded candidates (choice i draws with seed + i), all returned with their logprobs.
    const all = await client.completions.create({ ...base, n: 4, logprobs: 0 });
    const scores = all.choices.map((c) => sum(c.logprobs!.token_logprobs!));
    const expected = [...all.choices.keys()].sort((a, b) => scores[b]! - scores[a]! || a - b).slice(0, 2);
    const best = await client.completions.create({ ...base, n: 2, best_of: 4 });
    expect(best.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(best.choices.map((c) => c.text)).toEqual(expected.map((i) => all.choices[i]!.text));
    // Logprobs were needed to rank, not asked for: none in the answer.
    expect(best.choices.every((c) => c.logprobs === null)).toBe(true);
    expect(best.usage).toEqual(all.usage);
    expect(best.usage!.completion_tokens).toBe(sum(all.choices.map((c) => c.logprobs!.tokens!.length)));
    // Asked for, they come with the chosen candidates.
    const withLogprobs = await client.completions.create({ ...base, n: 1, best_of: 4, logprobs: 0 });
    // To float32 rounding: this call's steps group the rows differently (the prompt is cached now),
    // and a step of a few rows runs the native layer ops where a larger one runs ONNX Runtime.
    expect(sum(withLogprobs.choices[0]!.logprobs!.token_logprobs!)).toBeCloseTo(Math.max(...scores), 5);
  });

  it('refuses best_of below n, with stream, on chat, and non-integers, by name', async () => {
    const refusals = [
      client.completions.create({ ...base, n: 3, best_of: 2 }),
      client.completions.create({ ...base, n: 1, best_of: 2, stream: true }),
      client.completions.create({ ...base, best_of: 1.5 }),
    ];
    for (const refusal of refusals) await expect(refusal).rejects.toMatchObject({ status: 400, param: 'best_of' });
    const chat = client.chat.completions.create({ model: 'qwen3', messages: [{ role: 'user', content: 'hi' }], best_of: 2 } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    await expect(chat).rejects.toMatchObject({ status: 400, param: 'best_of', code: 'unsupported_parameter' });
    // best_of equal to n streams as plain n.
    const stream = await client.completions.create({ ...base, n: 1, best_of: 1, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(server.service.llmModel('qwen3').engine.numActive).toBe(0);
  });
});

describe('suffix (fill-in-the-middle)', () => {
  it("frames the prompt with the tokenizer's FIM tokens and completes the middle", async () => {
    const prefix = 'def add(a, b):\n    ';
    const suffix = '\n    return c\n';
    const greedy = { model: 'qwen3', max_tokens: 5, temperature: 0, ignore_eos: true } as const;
    const fim = await client.completions.create({ ...greedy, prompt: prefix, suffix } as OpenAI.CompletionCreateParamsNonStreaming);
    // The same as sending the framed prompt by hand: the FIM markers are the special tokens.
    const framed = `<|fim_prefix|>${prefix}<|fim_suffix|>${suffix}<|fim_middle|>`;
    const byHand = await client.completions.create({ ...greedy, prompt: framed });
    expect(fim.choices[0]!.text).toBe(byHand.choices[0]!.text);
    const tokenizer = server.service.llmModel('qwen3').processor.tokenizer;
    const ids = tokenizer.encode(framed, { add_special_tokens: false }).ids;
    for (const marker of ['<|fim_prefix|>', '<|fim_suffix|>', '<|fim_middle|>']) expect(ids).toContain(tokenizer.token_to_id(marker));
    expect(fim.usage!.prompt_tokens).toBe(ids.length);
    // An empty suffix is no suffix.
    const plain = await client.completions.create({ ...greedy, prompt: prefix, suffix: '' });
    expect(plain.usage!.prompt_tokens).toBe(tokenizer.encode(prefix, { add_special_tokens: false }).ids.length);
  });

  it('refuses suffix for a model without FIM tokens, naming the model and suffix; and with token-id prompts', async () => {
    const refused = await client.completions.create({ model: 'plain', prompt: 'x', suffix: 'y', max_tokens: 2 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BadRequestError);
    expect(refused).toMatchObject({ status: 400, param: 'suffix', type: 'invalid_request_error' });
    expect((refused as BadRequestError).message).toContain("model 'plain'");
    await expect(client.completions.create({ model: 'qwen3', prompt: [1, 2, 3], suffix: 'y', max_tokens: 2 })).rejects.toMatchObject({ status: 400, param: 'suffix' });
    const numeric = await fetch(`${server.http}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'qwen3', prompt: 'x', suffix: 5 }) });
    expect(numeric.status).toBe(400);
    expect(await numeric.json()).toMatchObject({ error: { param: 'suffix', type: 'invalid_request_error' } });
    // The plain model still serves completions without suffix.
    expect((await client.completions.create({ model: 'plain', prompt: 'x', max_tokens: 2 })).choices).toHaveLength(1);
  });
});
