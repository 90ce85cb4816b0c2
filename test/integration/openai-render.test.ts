// vLLM's render routes on the real server: /v1/completions/render and /v1/chat/completions/render
// answer with vLLM's GenerateRequest shape, and their token_ids are the ids the engine gets for
// the same body: equal to the tokenizer module's encoding, to the prompt the engine reports back
// (usage.prompt_tokens and the prompt_logprobs ids of a real completion), through the chat
// template with tools, and through fill-in-the-middle framing. Rendering generates nothing.
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { useLlmServerWithClient } from '../support/generation.js';

const llm = useLlmServerWithClient();

const post = async (path: string, body: unknown) => {
  const response = await fetch(`${llm.server.http}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  // Read loosely (test/support/fetch-json.d.ts), asserted field by field.
  return { status: response.status, body: await response.json() };
};
const tokenizer = () => llm.server.service.llmModel('qwen3').processor.tokenizer;
const stats = async () => (await (await fetch(`${llm.server.http}/v2/models/qwen3/stats`)).json()).model_stats[0];

type VllmChoice = OpenAI.CompletionChoice & { prompt_logprobs?: (Record<string, unknown> | null)[] };
/** The prompt ids the engine reports for a real completion of `body`: ids of prompt_logprobs after the first (null) entry. */
async function enginePrompt(body: Record<string, unknown>): Promise<{ promptTokens: number; idsAfterFirst: number[] }> {
  const completion = await llm.client.completions.create({ ...body, max_tokens: 1, temperature: 0, prompt_logprobs: 0 } as unknown as OpenAI.CompletionCreateParamsNonStreaming);
  const entries = (completion.choices[0] as VllmChoice).prompt_logprobs!;
  expect(entries[0]).toBeNull();
  return { promptTokens: completion.usage!.prompt_tokens, idsAfterFirst: entries.slice(1).map((e) => Number(Object.keys(e!)[0])) };
}

describe('POST /v1/completions/render', () => {
  it("answers vLLM's GenerateRequest list with the ids the engine sees, generating nothing", async () => {
    const before = await stats();
    const prompt = 'The quick brown fox jumps over the lazy dog';
    const { status, body } = await post('/v1/completions/render', { model: 'qwen3', prompt, max_tokens: 7, temperature: 0.5, top_p: 0.9, seed: 3, stop: ['.'] });
    expect(status).toBe(200);
    expect(body).toHaveLength(1);
    const [rendered] = body;
    expect(Object.keys(rendered).sort()).toEqual(
      ['cache_salt', 'features', 'kv_transfer_params', 'model', 'priority', 'request_id', 'sampling_params', 'stream', 'stream_options', 'token_ids'].sort(),
    );
    expect(rendered).toMatchObject({ model: 'qwen3', features: null, stream: false, stream_options: null, cache_salt: null, priority: 0 });
    expect(rendered.request_id).toMatch(/^cmpl-/);
    expect(rendered.sampling_params).toMatchObject({ n: 1, temperature: 0.5, top_p: 0.9, seed: 3, max_tokens: 7, stop: ['.'] });
    expect(rendered.token_ids).toEqual(tokenizer().encode(prompt).ids);
    const engine = await enginePrompt({ model: 'qwen3', prompt });
    expect(rendered.token_ids).toHaveLength(engine.promptTokens);
    expect(rendered.token_ids.slice(1)).toEqual(engine.idsAfterFirst);
    // Only the enginePrompt completion ran.
    expect((await stats()).inference_stats.success.count).toBe(before.inference_stats.success.count + 1);
  });

  it('renders each prompt of a list in order, token-id prompts as given, with n and stream settings kept', async () => {
    const ids = tokenizer().encode('Already tokenized', { add_special_tokens: false }).ids;
    const { status, body } = await post('/v1/completions/render', { model: 'qwen3', prompt: ['One prompt', 'Another prompt'], n: 2, stream: true, stream_options: { include_usage: true } });
    expect(status).toBe(200);
    expect(body.map((r: { token_ids: number[] }) => r.token_ids)).toEqual(['One prompt', 'Another prompt'].map((p) => tokenizer().encode(p).ids));
    expect(new Set(body.map((r: { request_id: string }) => r.request_id)).size).toBe(2);
    expect(body[0]).toMatchObject({ stream: true, stream_options: { include_usage: true }, sampling_params: { n: 2 } });
    const tokens = await post('/v1/completions/render', { model: 'qwen3', prompt: ids, cache_salt: 'tenant-a' });
    expect(tokens.body).toMatchObject([{ token_ids: ids, cache_salt: 'tenant-a' }]);
  });

  it('frames a prompt with suffix for fill-in-the-middle as the engine gets it', async () => {
    const body = { model: 'qwen3', prompt: 'def add(a, b):\n    return', suffix: '\n\nprint(add(1, 2))' };
    const rendered = (await post('/v1/completions/render', body)).body[0];
    const engine = await enginePrompt(body);
    expect(rendered.token_ids).toHaveLength(engine.promptTokens);
    expect(rendered.token_ids.slice(1)).toEqual(engine.idsAfterFirst);
    expect(rendered.token_ids).toContain(tokenizer().token_to_id('<|fim_middle|>'));
  });

  it('refuses what /v1/completions refuses, in the OpenAI error shape', async () => {
    const unknown = await post('/v1/completions/render', { model: 'nope', prompt: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ type: expect.any(String), message: expect.any(String) });
    const field = await post('/v1/completions/render', { model: 'qwen3', prompt: 'x', not_a_field: 1 });
    expect(field).toMatchObject({ status: 400, body: { error: { param: 'not_a_field' } } });
    const long = await post('/v1/completions/render', { model: 'qwen3', prompt: 'word '.repeat(100_000) });
    const real = await post('/v1/completions', { model: 'qwen3', prompt: 'word '.repeat(100_000) });
    expect(long.status).toBe(400);
    expect(long.body.error.code).toBe(real.body.error.code);
  });
});

describe('POST /v1/chat/completions/render', () => {
  const messages = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Name a colour.' },
  ];

  it('answers one GenerateRequest whose ids are the chat template applied, as /tokenize and the engine see them', async () => {
    const { status, body } = await post('/v1/chat/completions/render', { model: 'qwen3', messages, max_tokens: 5 });
    expect(status).toBe(200);
    expect(Array.isArray(body)).toBe(false);
    expect(body.request_id).toMatch(/^chatcmpl-/);
    expect(body.sampling_params).toMatchObject({ n: 1, max_tokens: 5 });
    const tokenized = await post('/tokenize', { model: 'qwen3', messages });
    expect(body.token_ids).toEqual(tokenized.body.tokens);
    const chat = await llm.client.chat.completions.create({ model: 'qwen3', messages: messages as OpenAI.ChatCompletionMessageParam[], max_tokens: 1 });
    expect(body.token_ids).toHaveLength(chat.usage!.prompt_tokens);
  });

  it('renders tools into the prompt as the chat route does', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const plain = (await post('/v1/chat/completions/render', { model: 'qwen3', messages })).body;
    const withTools = (await post('/v1/chat/completions/render', { model: 'qwen3', messages, tools, tool_choice: 'none' })).body;
    expect(withTools.token_ids.length).toBeGreaterThan(plain.token_ids.length);
    expect(tokenizer().decode(withTools.token_ids, { skip_special_tokens: false })).toContain('get_weather');
    const chat = await llm.client.chat.completions.create({
      model: 'qwen3',
      messages: messages as OpenAI.ChatCompletionMessageParam[],
      tools: tools as OpenAI.ChatCompletionTool[],
      tool_choice: 'none',
      max_tokens: 1,
    });
    expect(withTools.token_ids).toHaveLength(chat.usage!.prompt_tokens);
  });

  it('refuses bad messages and unknown models in the OpenAI error shape', async () => {
    expect((await post('/v1/chat/completions/render', { model: 'nope', messages })).status).toBe(404);
    const bad = await post('/v1/chat/completions/render', { model: 'qwen3', messages: [{ role: 'wizard', content: 'x' }] });
    expect(bad).toMatchObject({ status: 400, body: { error: { message: expect.any(String) } } });
  });
});
