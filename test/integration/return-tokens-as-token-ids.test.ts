// vLLM's `return_tokens_as_token_ids` on chat and completions, through the official OpenAI SDK
// (an extra body field, as vLLM's clients send it): every logprobs token (sampled, alternatives,
// echoed prompt) is spelled `token_id:<id>`, whole and streamed; the ids are the generated ones
// (they detokenize to the text) and the echoed prompt's are the prompt's; `false` is the default.

import { describe, expect, it } from 'vitest';
import { useLlmServerWithClient } from '../support/generation.js';

const llm = useLlmServerWithClient();

const TOKEN_ID = /^token_id:(\d+)$/;
const idOf = (token: string): number => Number(TOKEN_ID.exec(token)![1]);
const asIds = { return_tokens_as_token_ids: true } as Record<string, unknown>;

async function post(path: string, body: object): Promise<Record<string, unknown>> {
  const response = await fetch(`${llm.server.http}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

const detokenize = async (tokens: number[]): Promise<string> => (await post('/detokenize', { tokens })).prompt as string;

describe('chat', () => {
  const request = { model: 'qwen3', messages: [{ role: 'user' as const, content: 'Say something.' }], max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2 };

  it('spells every token token_id:<id>, bytes those of the spelling; the ids are the answer', async () => {
    const completion = await llm.client.chat.completions.create({ ...request, ...asIds });
    const content = completion.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(completion.usage!.completion_tokens);
    for (const entry of content) {
      expect(entry.token).toMatch(TOKEN_ID);
      expect(entry.bytes).toEqual([...Buffer.from(entry.token)]);
      expect(entry.top_logprobs).toHaveLength(2);
      for (const top of entry.top_logprobs) expect(top.token).toMatch(TOKEN_ID);
    }
    expect(await detokenize(content.map((e) => idOf(e.token)))).toContain(completion.choices[0]!.message.content!);
    // The same request without the flag (or with false) spells text.
    const plain = await llm.client.chat.completions.create({ ...request, return_tokens_as_token_ids: false } as typeof request);
    expect(plain.choices[0]!.logprobs!.content!.map((e) => e.token).join('')).toBe(plain.choices[0]!.message.content);
    expect(plain.choices[0]!.logprobs!.content!.map((e) => e.logprob)).toEqual(content.map((e) => e.logprob));
  });

  it('streams the same spelling', async () => {
    const stream = await llm.client.chat.completions.create({ ...request, stream: true, ...asIds });
    const tokens: string[] = [];
    for await (const chunk of stream) for (const entry of chunk.choices[0]?.logprobs?.content ?? []) tokens.push(entry.token);
    expect(tokens.length).toBeGreaterThan(0);
    for (const token of tokens) expect(token).toMatch(TOKEN_ID);
  });
});

describe('completions', () => {
  it('spells sampled, alternative and echoed prompt tokens token_id:<id>', async () => {
    const prompt = 'The cat sat on the';
    const promptIds = (await post('/tokenize', { prompt })).tokens as number[];
    const completion = await llm.client.completions.create({ model: 'qwen3', prompt, max_tokens: 4, temperature: 0, logprobs: 2, echo: true, ...asIds });
    const { tokens, top_logprobs } = completion.choices[0]!.logprobs!;
    expect(tokens!.slice(0, promptIds.length).map(idOf)).toEqual(promptIds);
    for (const token of tokens!) expect(token).toMatch(TOKEN_ID);
    for (const top of top_logprobs!.slice(promptIds.length)) for (const token of Object.keys(top!)) expect(token).toMatch(TOKEN_ID);
  });

  it('refuses a non-boolean value naming the field', async () => {
    const response = await fetch(`${llm.server.http}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'qwen3', prompt: 'Hi', max_tokens: 1, return_tokens_as_token_ids: 'yes' }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { param: string } }).error.param).toBe('return_tokens_as_token_ids');
  });
});
