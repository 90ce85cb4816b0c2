// speculative_config through the real server: a model serving n-gram speculation answers greedy
// completions, seeded sampled ones and JSON-schema-constrained chat completions with the same text
// as the same model without it, counts its proposals in vLLM's
// spec_decode series (conveyor: and vllm: from one reading), logs per-request acceptance in the
// finished-generation line, and a bad speculative_config is refused at load naming the field.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configOf, loadModel, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const SPEC = '{\\"method\\": \\"ngram\\", \\"num_speculative_tokens\\": 4, \\"prompt_lookup_min\\": 1, \\"prompt_lookup_max\\": 3}';
const withSpec = (name: string, json: string) => configOf('qwen3-tiny', name, (text) => `${text}\nparameters: { key: "speculative_config" value: { string_value: "${json}" } }\n`);

let server: TestServer;
beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'plain', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'plain') },
    { name: 'spec', from: 'qwen3-tiny', config: withSpec('spec', SPEC) },
    { name: 'bad-spec', from: 'qwen3-tiny', config: withSpec('bad-spec', '{\\"method\\": \\"eagle\\", \\"num_speculative_tokens\\": 2}') },
  ]);
  server = await startTestServer(repository, ['--model-control-mode', 'explicit', '--load-model', 'plain', '--load-model', 'spec', '--vllm-metric-names', 'true']);
}, 120_000);
afterAll(async () => server?.stop());

describe('speculative_config', () => {
  it('answers greedy requests with the same text as without it, and counts proposals and acceptance', async () => {
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const prompts = ['one two three one two three one two', 'the cat sat on the mat and the cat sat', 'Hello'];
    const complete = async (model: string, prompt: string) => (await client.completions.create({ model, prompt, max_tokens: 40, temperature: 0 })).choices[0]!.text;
    for (const prompt of prompts) expect(await complete('spec', prompt), prompt).toBe(await complete('plain', prompt));
    expect(server.logs.some((line) => line.includes('spec:1: speculative decoding: ngram, up to 4 tokens from a 1–3-token match'))).toBe(true);

    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name}\\{model_name="spec"\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN);
    for (const prefix of ['conveyor:', 'vllm:']) {
      expect(value(`${prefix}spec_decode_num_drafts_total`)).toBeGreaterThan(0);
      expect(value(`${prefix}spec_decode_num_draft_tokens_total`)).toBeGreaterThanOrEqual(value(`${prefix}spec_decode_num_accepted_tokens_total`));
    }
    expect(value('vllm:spec_decode_num_drafts_total')).toBe(value('conveyor:spec_decode_num_drafts_total'));
    // A model without speculation has the series at zero.
    expect(Number(/^conveyor:spec_decode_num_drafts_total\{model_name="plain"\} (\S+)$/m.exec(metrics)?.[1])).toBe(0);
  });

  it('gives seeded sampled requests and JSON-schema-constrained ones the same text (and logprobs) as without it, with proposals accepted', async () => {
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const accepted = async () => {
      const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
      return Number(/^conveyor:spec_decode_num_accepted_tokens_total\{model_name="spec"\} (\S+)$/m.exec(metrics)?.[1]);
    };
    const before = await accepted();
    const sampled = async (model: string, prompt: string, seed: number) => {
      const choice = (await client.completions.create({ model, prompt, max_tokens: 40, temperature: 0.3, top_p: 0.95, frequency_penalty: 0.05, seed, logprobs: 1 })).choices[0]!;
      return { text: choice.text, tokens: choice.logprobs!.tokens, logprobs: choice.logprobs!.token_logprobs! };
    };
    for (const [i, prompt] of ['one two three one two three one two', 'the cat sat on the mat and the cat sat'].entries()) {
      const withSpec = await sampled('spec', prompt, 100 + i);
      const plain = await sampled('plain', prompt, 100 + i);
      expect(withSpec.text, prompt).toBe(plain.text);
      expect(withSpec.tokens).toEqual(plain.tokens);
      withSpec.logprobs.forEach((l, j) => expect(l).toBeCloseTo(plain.logprobs[j]!, 3));
    }
    const schema = { type: 'object', properties: { a: { type: 'array', items: { enum: [1, 2, 3, 10, 20] }, minItems: 3, maxItems: 12 } }, required: ['a'], additionalProperties: false };
    const structured = async (model: string) =>
      (
        await client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'Some numbers, please.' }],
          max_tokens: 400,
          temperature: 0,
          response_format: { type: 'json_schema', json_schema: { name: 'numbers', strict: true, schema } },
        })
      ).choices[0]!;
    const choice = await structured('spec');
    expect(choice.finish_reason).toBe('stop');
    const json = choice.message.content!;
    expect(json).toBe((await structured('plain')).message.content);
    const { a } = JSON.parse(json) as { a: unknown[] };
    expect(a.length).toBeGreaterThanOrEqual(3);
    for (const item of a) expect([1, 2, 3, 10, 20]).toContain(item);
    expect(await accepted()).toBeGreaterThan(before);
  });

  it('refuses a method it does not serve, naming it', async () => {
    const { status, error } = await loadModel(server, 'bad-spec');
    expect(status).toBe(400);
    expect(error).toContain('parameter speculative_config: method must be "ngram" (prompt lookup) or "draft_model", got "eagle"');
  });
});
