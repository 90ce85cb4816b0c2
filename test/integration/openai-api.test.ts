// The OpenAI API through the official `openai` SDK against the real server on loopback: models,
// chat and completions (streaming and not), n > 1, logprobs, echo, seeds, include_usage, prefix
// cache hits, embeddings, and the SDK's error classes. Greedy output through the API must equal
// the engine's own output for the same request.
import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerateInput, LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let client: OpenAI;
let model: LlmModel;

beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') },
    { name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') },
  ]);
  server = await startTestServer(repository);
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
  model = server.service.llmModel('qwen3');
}, 120_000);
afterAll(async () => server?.stop());

const user = (content: string) => [{ role: 'user' as const, content }];
const greedy = { temperature: 0, max_tokens: 12, ignore_eos: true } as Record<string, unknown>;

/** The engine's own output for a request, bypassing every front end. */
async function engineText(input: GenerateInput): Promise<{ text: string; tokens: number[] }> {
  let text = '';
  const tokens: number[] = [];
  for await (const event of model.generate(await model.prepare(input))) {
    text += event.text;
    tokens.push(...event.tokenIds);
  }
  return { text, tokens };
}

describe('models', () => {
  it("lists the LLM and the embedding model in OpenAI's list shape", async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['bert', 'qwen3']);
    expect(page.data[1]).toMatchObject({ id: 'qwen3', object: 'model', owned_by: 'conveyor', max_model_len: 4096 });
    expect((await client.models.retrieve('bert')).id).toBe('bert');
    await expect(client.models.retrieve('missing')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('chat completions', () => {
  it("answers with exactly the engine's greedy output, in the chat.completion shape", async () => {
    const completion = (await client.chat.completions.create({ model: 'qwen3', messages: user('Hello there'), ...greedy } as never)) as OpenAI.ChatCompletion;
    const engine = await engineText({ prompt: { kind: 'chat', messages: user('Hello there') }, sampling: greedy });
    expect(completion).toMatchObject({ object: 'chat.completion', model: 'qwen3' });
    expect(completion.id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
    expect(completion.system_fingerprint).toMatch(/^fp_[0-9a-f]{10}$/);
    expect(completion.choices).toEqual([{ index: 0, message: { role: 'assistant', content: engine.text, refusal: null }, logprobs: null, finish_reason: 'length' }]);
    expect(completion.usage).toMatchObject({ completion_tokens: 12, total_tokens: completion.usage!.prompt_tokens + 12 });
  });

  it('streams the same text, role with the first content, finish_reason only at the end, usage last', async () => {
    const stream = (await client.chat.completions.create({
      model: 'qwen3',
      messages: user('Hello there'),
      stream: true,
      stream_options: { include_usage: true },
      ...greedy,
    } as never)) as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>;
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const engine = await engineText({ prompt: { kind: 'chat', messages: user('Hello there') }, sampling: greedy });
    const content = chunks.slice(0, -1);
    expect(content[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: expect.any(String) });
    expect(content[0]!.choices[0]!.delta.content).not.toBe('');
    expect(content.slice(1).every((c) => c.choices[0]!.delta.role === undefined)).toBe(true);
    expect(content.map((c) => c.choices[0]!.delta.content ?? '').join('')).toBe(engine.text);
    expect(content.slice(0, -1).every((c) => c.choices[0]!.finish_reason === null && c.usage === null)).toBe(true);
    expect(content.at(-1)!.choices[0]!.finish_reason).toBe('length');
    expect(new Set(chunks.map((c) => `${c.id} ${c.created}`)).size).toBe(1);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 12, prompt_tokens: expect.any(Number), prompt_tokens_details: { cached_tokens: expect.any(Number) } } });
  });

  it('sends no usage at all without include_usage', async () => {
    const stream = (await client.chat.completions.create({ model: 'qwen3', messages: user('x'), stream: true, max_tokens: 3 })) as AsyncIterable<OpenAI.ChatCompletionChunk>;
    for await (const chunk of stream) {
      expect('usage' in chunk).toBe(false);
      expect(chunk.choices).toHaveLength(1);
    }
  });

  it('fans n out into indexed choices; a seed gives each choice its own reproducible sample', async () => {
    const request = { model: 'qwen3', messages: user('Tell me a story'), n: 3, temperature: 1, seed: 42, max_tokens: 10, ignore_eos: true } as never;
    const first = (await client.chat.completions.create(request)) as OpenAI.ChatCompletion;
    const again = (await client.chat.completions.create(request)) as OpenAI.ChatCompletion;
    expect(first.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(again.choices.map((c) => c.message.content)).toEqual(first.choices.map((c) => c.message.content));
    expect(new Set(first.choices.map((c) => c.message.content)).size).toBe(3);
    expect(first.usage).toMatchObject({ completion_tokens: 30, total_tokens: first.usage!.prompt_tokens + 30 });
  });

  it("submits n choices together so the later ones share the prompt's cached blocks", async () => {
    const hits = () => model.engine.stats!.prefixCacheHits;
    const before = hits();
    const long = 'Pack my box with five dozen liquor jugs. '.repeat(10);
    const completion = (await client.chat.completions.create({ model: 'qwen3', messages: user(long), n: 4, max_tokens: 2 })) as OpenAI.ChatCompletion;
    const fullBlocks = Math.floor(completion.usage!.prompt_tokens / 16) * 16;
    expect(fullBlocks).toBeGreaterThanOrEqual(64);
    // Choices 1..3 find every full block of the prompt that choice 0 computes.
    expect(hits() - before).toBeGreaterThanOrEqual(3 * fullBlocks);
  });

  it('streams n choices, each starting with the role and finishing once', async () => {
    const stream = (await client.chat.completions.create({
      model: 'qwen3',
      messages: user('hi'),
      n: 2,
      max_tokens: 4,
      ignore_eos: true,
      stream: true,
    } as never)) as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>;
    const byIndex = new Map<number, OpenAI.ChatCompletionChunk.Choice[]>();
    for await (const chunk of stream) for (const c of chunk.choices) byIndex.set(c.index, [...(byIndex.get(c.index) ?? []), c]);
    expect([...byIndex.keys()].sort()).toEqual([0, 1]);
    for (const choices of byIndex.values()) {
      expect(choices[0]!.delta.role).toBe('assistant');
      expect(choices.filter((c) => c.finish_reason !== null).map((c) => c.finish_reason)).toEqual(['length']);
    }
  });

  it('returns logprobs as content[] with bytes that rebuild the text and top_logprobs alternatives', async () => {
    const completion = (await client.chat.completions.create({ model: 'qwen3', messages: user('bytes'), logprobs: true, top_logprobs: 3, ...greedy } as never)) as OpenAI.ChatCompletion;
    const { content, refusal } = completion.choices[0]!.logprobs!;
    expect(refusal).toBeNull();
    expect(content).toHaveLength(12);
    for (const entry of content!) {
      expect(entry.top_logprobs).toHaveLength(3);
      expect(entry.logprob).toBeLessThanOrEqual(0);
      // Greedy: the sampled token is the most likely one.
      expect(entry.top_logprobs[0]!.logprob).toBeCloseTo(entry.logprob, 9);
    }
    // Tokens holding part of a character decode to U+FFFD alone; their bytes still rebuild the text.
    const bytes = Buffer.from(content!.flatMap((e) => e.bytes!));
    expect(new TextDecoder().decode(bytes)).toBe(completion.choices[0]!.message.content);
  });

  it('reports prefix-cache hits as prompt_tokens_details.cached_tokens', async () => {
    const long = 'The quick brown fox jumps over the lazy dog. '.repeat(8);
    const ask = () => client.chat.completions.create({ model: 'qwen3', messages: user(long), max_tokens: 2 }) as Promise<OpenAI.ChatCompletion>;
    await ask();
    const second = await ask();
    expect(second.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(16);
    expect(second.usage!.prompt_tokens_details!.cached_tokens).toBeLessThan(second.usage!.prompt_tokens);
  });

  it('passes chat_template_kwargs and the vLLM extras through', async () => {
    const completion = (await client.chat.completions.create({
      model: 'qwen3',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      ],
      max_completion_tokens: 5,
      min_tokens: 5,
      top_k: 5,
      min_p: 0.01,
      repetition_penalty: 1.1,
      stop_token_ids: [0],
      chat_template_kwargs: { enable_thinking: false },
      presence_penalty: 0.5,
      frequency_penalty: 0.5,
      logit_bias: { '100': 5 },
      stop: ['zzz'],
      user: 'u-1',
      skip_special_tokens: true,
    } as never)) as OpenAI.ChatCompletion;
    expect(completion.usage!.completion_tokens).toBe(5);
  });
});

describe('completions', () => {
  it('equals the engine for a token-id prompt; streaming gives the same text', async () => {
    const prompt = [9707, 11, 1879, 0];
    const body = { model: 'qwen3', prompt, ...greedy } as never;
    const completion = (await client.completions.create(body)) as OpenAI.Completion;
    const engine = await engineText({ prompt: { kind: 'tokens', tokenIds: prompt }, sampling: greedy });
    expect(completion).toMatchObject({ object: 'text_completion', choices: [{ index: 0, text: engine.text, logprobs: null, finish_reason: 'length' }] });
    expect(completion.id).toMatch(/^cmpl-/);
    const stream = (await client.completions.create({ ...(body as object), stream: true } as never)) as unknown as AsyncIterable<OpenAI.Completion>;
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    expect(text).toBe(engine.text);
  });

  it('defaults max_tokens to 16 and numbers choices prompt × n', async () => {
    const completion = (await client.completions.create({ model: 'qwen3', prompt: ['one', 'two'], n: 2, ignore_eos: true } as never)) as OpenAI.Completion;
    expect(completion.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(completion.usage!.completion_tokens).toBe(64);
  });

  it('echoes the prompt ahead of the completion', async () => {
    const completion = (await client.completions.create({ model: 'qwen3', prompt: 'Echo me', echo: true, max_tokens: 3 })) as OpenAI.Completion;
    expect(completion.choices[0]!.text.startsWith('Echo me')).toBe(true);
  });

  it('returns tokens / token_logprobs / top_logprobs / text_offset', async () => {
    const completion = (await client.completions.create({ model: 'qwen3', prompt: 'Count', logprobs: 2, ...greedy } as never)) as OpenAI.Completion;
    const choice = completion.choices[0]!;
    const lp = choice.logprobs!;
    expect(lp.tokens).toHaveLength(12);
    expect(lp.token_logprobs).toHaveLength(12);
    expect(lp.top_logprobs!.every((top) => Object.keys(top).length >= 1 && Object.keys(top).length <= 2)).toBe(true);
    expect(lp.text_offset![0]).toBe(0);
    lp.text_offset!.slice(1).forEach((offset, i) => expect(offset).toBe(lp.text_offset![i]! + lp.tokens![i]!.length));
  });
});

describe('embeddings', () => {
  it('gives the same vectors as floats and as base64, and for text or its token ids', async () => {
    const floats = await client.embeddings.create({ model: 'bert', input: ['hello world', 'a longer sentence to embed'], encoding_format: 'float' });
    const base64 = await client.embeddings.create({ model: 'bert', input: ['hello world', 'a longer sentence to embed'] });
    expect(floats.data.map((d) => d.index)).toEqual([0, 1]);
    expect(floats.data[0]!.embedding).toHaveLength(32);
    expect(base64.data.map((d) => Array.from(d.embedding))).toEqual(floats.data.map((d) => d.embedding));
    // [CLS] hello world [SEP] and [CLS] a longer sentence to em ##bed [SEP].
    expect(floats).toMatchObject({ object: 'list', model: 'bert', usage: { prompt_tokens: 4 + 8, total_tokens: 4 + 8 } });
    // "hello world" in BERT uncased WordPiece: [CLS] hello world [SEP].
    const ids = await client.embeddings.create({ model: 'bert', input: [[101, 7592, 2088, 102]], encoding_format: 'float' });
    ids.data[0]!.embedding.forEach((v, i) => expect(v).toBeCloseTo(floats.data[0]!.embedding[i]!, 5));
  });

  it('shortens to dimensions: the leading components re-normalised, as floats and as base64', async () => {
    const input = ['hello world', 'a longer sentence to embed'];
    const full = await client.embeddings.create({ model: 'bert', input, encoding_format: 'float' });
    const short = await client.embeddings.create({ model: 'bert', input, dimensions: 8, encoding_format: 'float' });
    const short64 = await client.embeddings.create({ model: 'bert', input, dimensions: 8 });
    short.data.forEach((d, i) => {
      expect(d.embedding).toHaveLength(8);
      const head = full.data[i]!.embedding.slice(0, 8);
      const norm = Math.hypot(...head);
      d.embedding.forEach((v, k) => expect(v).toBeCloseTo(head[k]! / norm, 5));
      expect(Math.hypot(...d.embedding)).toBeCloseTo(1, 5);
    });
    expect(short64.data.map((d) => Array.from(d.embedding))).toEqual(short.data.map((d) => d.embedding));
    // The model's own size changes nothing.
    const same = await client.embeddings.create({ model: 'bert', input, dimensions: 32, encoding_format: 'float' });
    expect(same.data.map((d) => d.embedding)).toEqual(full.data.map((d) => d.embedding));
  });

  it('refuses a generation model and a dimensions value larger than the model or below 1', async () => {
    await expect(client.embeddings.create({ model: 'qwen3', input: 'x' })).rejects.toMatchObject({ status: 400, param: 'model' });
    for (const dimensions of [33, 0, -1, 2.5]) {
      await expect(client.embeddings.create({ model: 'bert', input: 'x', dimensions })).rejects.toMatchObject({ status: 400, param: 'dimensions', type: 'invalid_request_error' });
    }
  });
});

describe('errors', () => {
  it.each([
    ['an invalid value', { temperature: -1 }, 'temperature', null],
    ['an unsupported feature', { functions: [{ name: 'f' }] }, 'functions', 'unsupported_parameter'],
    ['an invalid tool name', { tools: [{ type: 'function', function: { name: 'has space' } }] }, 'tools[0].function.name', null],
    ['an unknown response_format type', { response_format: { type: 'json' } }, 'response_format.type', null],
    ['an unknown field', { frobnicate: true }, 'frobnicate', 'unknown_parameter'],
    ['stream_options without stream', { stream_options: { include_usage: true } }, 'stream_options', null],
    ['integer logprobs on chat', { logprobs: 3 }, 'logprobs', null],
    ['a bad role', { messages: [{ role: 'wizard', content: 'x' }] }, 'messages', null],
  ])('rejects %s with BadRequestError naming the param', async (_, extra, param, code) => {
    const error = await client.chat.completions.create({ model: 'qwen3', messages: user('x'), ...extra } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ param, code, type: 'invalid_request_error' });
  });

  it('answers an unknown model with NotFoundError model_not_found', async () => {
    const error = await client.chat.completions.create({ model: 'gpt-9', messages: user('x') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ code: 'model_not_found', param: null });
  });

  it('answers a prompt longer than the context with context_length_exceeded', async () => {
    const prompt = Array.from({ length: 5000 }, (_, i) => 100 + (i % 1000));
    const error = await client.completions.create({ model: 'qwen3', prompt }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'prompt' });
    const tooMany = await client.chat.completions.create({ model: 'qwen3', messages: user('x'), max_completion_tokens: 100_000 }).catch((e: unknown) => e);
    expect(tooMany).toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'max_completion_tokens' });
  });

  it("answers an unknown /v1 path with a 404 in OpenAI's shape", async () => {
    const response = await fetch(`${server.http}/v1/does/not/exist`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: { message: expect.stringContaining('/v1/does/not/exist'), type: 'invalid_request_error', param: null, code: null } });
  });

  it('sends no CORS headers and answers no preflight unless CORS is configured', async () => {
    const response = await fetch(`${server.http}/v1/models`, { headers: { origin: 'https://app.example' } });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${server.http}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(404);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  it("answers malformed JSON with a 400 in OpenAI's shape", async () => {
    const response = await fetch(`${server.http}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": ' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error', param: null, code: null } });
  });
});

describe('tokenize and detokenize (vLLM)', () => {
  it('round-trips a prompt and counts chat tokens as chat completions does', async () => {
    const post = async (path: string, body: unknown) =>
      (await fetch(`${server.http}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<Record<string, unknown>>;
    const tokens = await post('/tokenize', { model: 'qwen3', prompt: 'hello world' });
    expect(tokens).toMatchObject({ count: 2, max_model_len: 4096, token_strs: null });
    expect(await post('/detokenize', { model: 'qwen3', tokens: tokens.tokens })).toEqual({ prompt: 'hello world' });
    const chat = await post('/tokenize', { messages: user('Hello there') });
    const completion = (await client.chat.completions.create({ model: 'qwen3', messages: user('Hello there'), max_tokens: 1 })) as OpenAI.ChatCompletion;
    expect(chat.count).toBe(completion.usage!.prompt_tokens);
  });
});
