// Reasoning through the real server, the official OpenAI SDK and the Vercel AI SDK. The
// random-weight tiny model never writes <think> by itself, so the reasoning model here is the
// same weights under reasoning_parser deepseek_r1, whose output starts inside the block: the
// whole generation is thinking until a </think>. The same weights without a parser ("plain")
// give the raw text, which the reasoning model's fields must be the reading of, token for token.
// A copy of the model whose Qwen3 template opens <think> in the prompt covers the qwen3 parser's
// prompt-opened block; the engine's budget (max_thinking_tokens) closes blocks at an exact count.

import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import OpenAI, { BadRequestError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAssistantOutput } from '../../src/assistant-output/index.js';
import { deepseekR1, qwen3 } from '../../src/reasoning/index.js';
import { copyFile, link, mkdir, mkdtemp, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let client: OpenAI;

const withReasoning = (parser: string) => (text: string) => `${text}parameters: { key: "reasoning_parser" value: { string_value: "${parser}" } }\n`;

/**
 * qwen3-tiny's files (hard links, or copies across file systems: a symbolic link out of the
 * version directory is refused) with Qwen3's template changed so its generation prompt opens
 * the block, as Qwen3-Thinking-2507's does.
 */
async function openingVersionDir(): Promise<string> {
  const source = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
  const dir = await mkdtemp(join(tmpdir(), 'conveyor-opening-'));
  for (const sub of ['', 'onnx']) {
    await mkdir(join(dir, sub), { recursive: true });
    for (const entry of await readdir(join(source, sub), { withFileTypes: true })) {
      if (entry.isFile()) await link(join(source, sub, entry.name), join(dir, sub, entry.name)).catch(() => copyFile(join(source, sub, entry.name), join(dir, sub, entry.name)));
    }
  }
  const template = (JSON.parse(await readFile(join(source, 'tokenizer_config.json'), 'utf8')) as { chat_template: string }).chat_template;
  const opening = template.replace("{{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}", "{{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- else %}\n        {{- '<think>\\n' }}\n    {%- endif %}");
  expect(opening).not.toBe(template);
  await writeFile(join(dir, 'chat_template.jinja'), opening);
  return dir;
}

beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'r1', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'r1', withReasoning('deepseek_r1')) },
    { name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3', withReasoning('qwen3')) },
    { name: 'plain', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'plain') },
  ]);
  const opening = await openingVersionDir();
  for (const [name, edit] of [
    ['opening', withReasoning('qwen3')],
    ['opening-plain', (t: string) => t],
  ] as const) {
    await mkdir(join(repository, name));
    await writeFile(join(repository, name, 'config.pbtxt'), configOf('qwen3-tiny', name, edit));
    await symlink(opening, join(repository, name, '1'), 'dir');
  }
  server = await startTestServer(repository);
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 120_000);
afterAll(async () => server?.stop());

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Is 17 prime?' }];
const greedy = { messages, temperature: 0, max_tokens: 10 } as const;

/** The reasoning fields the server adds to messages and deltas (the SDK's types do not name them). */
interface Reasoning {
  reasoning_content?: string | null;
  reasoning?: string | null;
}

/** The SDK's request type plus the vLLM and budget fields this server adds. */
type ReasoningParams<P> = P & { ignore_eos?: boolean; max_thinking_tokens?: number; thinking_token_budget?: number; structured_outputs?: { choice: string[] } };
const params = (p: ReasoningParams<OpenAI.ChatCompletionCreateParamsNonStreaming>) => p;

describe('model cards', () => {
  it('say which models split reasoning (capabilities.reasoning follows the reasoning_parser parameter)', async () => {
    const reasoningOf = async (id: string) => ((await client.models.retrieve(id)) as OpenAI.Model & { capabilities: { reasoning: boolean } }).capabilities.reasoning;
    expect(await reasoningOf('r1')).toBe(true);
    expect(await reasoningOf('qwen3')).toBe(true);
    expect(await reasoningOf('plain')).toBe(false);
  });
});

/** The raw text the same weights generate for the request, read as deepseek_r1 reads it. */
async function expectedReading(extra: Record<string, unknown> = {}) {
  const raw = await client.chat.completions.create({ ...greedy, model: 'plain', ...extra });
  const choice = raw.choices[0]!;
  return { ...readAssistantOutput({ reasoning: { format: deepseekR1, startsInside: true }, toolCalls: null }, choice.message.content ?? ''), raw: choice };
}

describe('chat completions with a reasoning parser', () => {
  it('non-streaming: the thinking is message.reasoning_content and .reasoning, never content; usage counts its tokens', async () => {
    const expected = await expectedReading();
    const completion = await client.chat.completions.create({ ...greedy, model: 'r1' });
    const choice = completion.choices[0]!;
    const message = choice.message as typeof choice.message & Reasoning;
    expect(message.reasoning_content).toBe(expected.reasoning);
    expect(message.reasoning).toBe(expected.reasoning);
    expect(message.content).toBe(expected.content);
    expect(choice.finish_reason).toBe(expected.raw.finish_reason);
    expect(completion.usage!.completion_tokens).toBe(10);
    const details = completion.usage!.completion_tokens_details!;
    // Every generated token is inside the block unless the model happened to write </think>.
    if (expected.content === null) expect(details.reasoning_tokens).toBe(choice.finish_reason === 'length' ? 10 : 9);
    else expect(details.reasoning_tokens).toBeLessThan(10);
  });

  it('streaming: delta.reasoning_content and delta.reasoning carry the same text as the message; the usage chunk counts it', async () => {
    const expected = await expectedReading();
    const stream = await client.chat.completions.create({ ...greedy, model: 'r1', stream: true, stream_options: { include_usage: true } });
    let reasoningContent = '';
    let reasoning = '';
    let content = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let first = true;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const delta = chunk.choices[0]?.delta as (OpenAI.ChatCompletionChunk.Choice.Delta & Reasoning) | undefined;
      if (!delta) continue;
      if (first) expect(delta.role).toBe('assistant');
      first = false;
      expect(delta.reasoning).toBe(delta.reasoning_content);
      reasoningContent += delta.reasoning_content ?? '';
      reasoning += delta.reasoning ?? '';
      content += delta.content ?? '';
    }
    expect(reasoningContent).toBe(expected.reasoning ?? '');
    expect(reasoning).toBe(reasoningContent);
    expect(content).toBe(expected.content ?? '');
    const whole = await client.chat.completions.create({ ...greedy, model: 'r1' });
    expect(usage).toEqual(whole.usage);
    expect(usage!.completion_tokens_details!.reasoning_tokens).toBeGreaterThan(0);
  });

  it('qwen3: output that opens no block is all content, with zero reasoning tokens', async () => {
    const raw = await client.chat.completions.create({ ...greedy, model: 'plain' });
    const completion = await client.chat.completions.create({ ...greedy, model: 'qwen3' });
    const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & Reasoning;
    expect(message.content).toBe(raw.choices[0]!.message.content);
    expect(message.reasoning_content).toBeNull();
    expect(completion.usage!.completion_tokens_details).toEqual({ reasoning_tokens: 0 });
    // A model without a reasoning parser reports no reasoning at all.
    expect(raw.usage!.completion_tokens_details).toBeUndefined();
    expect((raw.choices[0]!.message as Reasoning).reasoning_content).toBeUndefined();
  });
});

describe('qwen3 with a template that opens <think> in the prompt', () => {
  it('reads the output as starting inside the block; reasoning_effort none renders it closed, so all is content', async () => {
    const raw = (await client.chat.completions.create({ ...greedy, model: 'opening-plain' })).choices[0]!.message.content ?? '';
    const expected = readAssistantOutput({ reasoning: { format: qwen3, startsInside: true }, toolCalls: null }, raw);
    const completion = await client.chat.completions.create({ ...greedy, model: 'opening' });
    const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & Reasoning;
    expect(message.reasoning_content).toBe(expected.reasoning);
    expect(message.content).toBe(expected.content);
    expect(completion.usage!.completion_tokens_details!.reasoning_tokens).toBeGreaterThan(0);

    const rawOff = (await client.chat.completions.create({ ...greedy, model: 'opening-plain', reasoning_effort: 'none' })).choices[0]!.message.content;
    const off = await client.chat.completions.create({ ...greedy, model: 'opening', reasoning_effort: 'none' });
    expect(off.choices[0]!.message.content).toBe(rawOff);
    expect((off.choices[0]!.message as Reasoning).reasoning_content).toBeNull();
    expect(off.usage!.completion_tokens_details).toEqual({ reasoning_tokens: 0 });
  });

  it('max_thinking_tokens ends the block the prompt opened', async () => {
    const completion = await client.chat.completions.create(params({ ...greedy, model: 'opening', ignore_eos: true, max_thinking_tokens: 3 }));
    expect(completion.usage!.completion_tokens_details).toEqual({ reasoning_tokens: 3 });
    expect(completion.choices[0]!.message.content).not.toBeNull();
  });
});

describe('reasoning_effort and the thinking budget fields', () => {
  it('none switches the template off (Qwen3 renders an empty block into the prompt), for any model', async () => {
    for (const model of ['plain', 'qwen3']) {
      const on = await client.chat.completions.create({ ...greedy, model, max_tokens: 1 });
      const off = await client.chat.completions.create({ ...greedy, model, max_tokens: 1, reasoning_effort: 'none' });
      expect(off.usage!.prompt_tokens).toBeGreaterThan(on.usage!.prompt_tokens);
      // The client's own template switch wins over the effort's.
      const explicit = await client.chat.completions.create({ ...greedy, model, max_tokens: 1, reasoning_effort: 'none', chat_template_kwargs: { enable_thinking: true } } as never);
      expect((explicit as OpenAI.ChatCompletion).usage!.prompt_tokens).toBe(on.usage!.prompt_tokens);
    }
    for (const effort of ['minimal', 'low', 'medium', 'high'] as const) {
      const completion = await client.chat.completions.create({ ...greedy, model: 'plain', max_tokens: 1, reasoning_effort: effort });
      expect(completion.choices).toHaveLength(1);
    }
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['an unknown effort', { reasoning_effort: 'huge' }, 'reasoning_effort'],
    ['a negative budget', { max_thinking_tokens: -1 }, 'max_thinking_tokens'],
    ["vLLM's name with a fraction", { thinking_token_budget: 1.5 }, 'thinking_token_budget'],
  ])('refuses %s with a 400 naming the field', async (_, extra, param) => {
    const error = await client.chat.completions.create({ ...greedy, model: 'r1', ...extra } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, param, type: 'invalid_request_error' });
    expect((error as BadRequestError).message).toMatch(param);
  });

  it('accepts both budget names on chat; completions refuse reasoning_effort (their text is never read for reasoning)', async () => {
    for (const extra of [{ max_thinking_tokens: 4 }, { thinking_token_budget: 4 }]) {
      await expect(client.chat.completions.create({ ...greedy, model: 'r1', ...extra } as never)).resolves.toBeDefined();
    }
    const error = await client.completions.create({ model: 'r1', prompt: 'x', max_tokens: 2, reasoning_effort: 'low' } as never).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, param: 'reasoning_effort', code: 'unsupported_parameter' });
  });
});

describe('the thinking budget, ended by the engine', () => {
  const reasoningOf = (completion: OpenAI.ChatCompletion) => completion.choices[0]!.message as OpenAI.ChatCompletionMessage & Reasoning;

  it('max_thinking_tokens cuts the reasoning at the budget: the engine writes </think> and an answer follows', async () => {
    // The same weights' first 3 tokens, unforced: what the 3 thinking tokens read as.
    const firstThree = (await client.chat.completions.create({ ...greedy, model: 'plain', max_tokens: 3 })).choices[0]!.message.content!;
    for (const budget of [{ max_thinking_tokens: 3 }, { thinking_token_budget: 3 }]) {
      const completion = await client.chat.completions.create(params({ ...greedy, model: 'r1', max_tokens: 10, ignore_eos: true, ...budget }));
      const message = reasoningOf(completion);
      expect(message.reasoning_content).toBe(firstThree.trim());
      expect(completion.usage!.completion_tokens_details).toEqual({ reasoning_tokens: 3 });
      // 3 thinking tokens and </think> leave 6 answer tokens.
      expect(message.content).not.toBeNull();
      expect(message.content).not.toContain('</think>');
    }
  });

  it('streamed, the budget gives the same reasoning and answer as the whole response', async () => {
    const request = params({ ...greedy, model: 'r1', max_tokens: 10, ignore_eos: true, max_thinking_tokens: 2 });
    const whole = reasoningOf(await client.chat.completions.create(request));
    const streaming: ReasoningParams<OpenAI.ChatCompletionCreateParamsStreaming> = { ...request, stream: true };
    const stream = await client.chat.completions.create(streaming);
    let reasoning = '';
    let content = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as (OpenAI.ChatCompletionChunk.Choice.Delta & Reasoning) | undefined;
      reasoning += delta?.reasoning_content ?? '';
      content += delta?.content ?? '';
    }
    expect(reasoning).toBe(whole.reasoning_content);
    expect(content).toBe(whole.content);
  });

  it('reasoning_effort none closes the block at once: no reasoning, all answer', async () => {
    const completion = await client.chat.completions.create(params({ ...greedy, model: 'r1', reasoning_effort: 'none', ignore_eos: true }));
    const message = reasoningOf(completion);
    expect(message.reasoning_content).toBeNull();
    expect(message.content).not.toBeNull();
    expect(completion.usage!.completion_tokens_details).toEqual({ reasoning_tokens: 0 });
  });

  it('structured output constrains the answer after the block, not the thinking', async () => {
    const completion = await client.chat.completions.create(params({ ...greedy, model: 'r1', max_tokens: 16, max_thinking_tokens: 4, structured_outputs: { choice: ['yes', 'no'] } }));
    const choice = completion.choices[0]!;
    const message = choice.message as OpenAI.ChatCompletionMessage & Reasoning;
    expect(message.reasoning_content).not.toBeNull();
    expect(['yes', 'no']).toContain(message.content);
    expect(choice.finish_reason).toBe('stop');
    expect(completion.usage!.completion_tokens_details).toEqual({ reasoning_tokens: 4 });
  });
});

describe('reasoning in the input history', () => {
  it('renders an assistant turn’s reasoning_content or reasoning alike (Qwen3 shows it after the last user turn)', async () => {
    const history = (thinking: Record<string, string>): OpenAI.ChatCompletionMessageParam[] => [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }], ...thinking } as never,
      { role: 'tool', tool_call_id: 'call_1', content: '21C' },
    ];
    const tokens = async (thinking: Record<string, string>) => (await client.chat.completions.create({ model: 'r1', messages: history(thinking), max_tokens: 1 })).usage!.prompt_tokens;
    const none = await tokens({});
    const named = await tokens({ reasoning_content: 'I should call the weather tool for Paris.' });
    expect(named).toBeGreaterThan(none + 8);
    expect(await tokens({ reasoning: 'I should call the weather tool for Paris.' })).toBe(named);
  });
});

describe('the Vercel AI SDK (@ai-sdk/openai-compatible) reads reasoning_content', () => {
  it('generateText returns the thinking as reasoningText and reasoning parts; streamText streams it as reasoning deltas', async () => {
    const conveyor = createOpenAICompatible({ name: 'conveyor', baseURL: `${server.http}/v1`, includeUsage: true });
    const expected = await expectedReading();
    const result = await generateText({ model: conveyor('r1'), messages: [{ role: 'user', content: 'Is 17 prime?' }], temperature: 0, maxOutputTokens: 10 });
    expect(result.reasoningText).toBe(expected.reasoning ?? undefined);
    expect(result.reasoning.map((part) => part.text).join('')).toBe(expected.reasoning ?? '');
    expect(result.text).toBe(expected.content ?? '');
    expect(result.usage.outputTokenDetails.reasoningTokens).toBeGreaterThan(0);

    const stream = streamText({ model: conveyor('r1'), messages: [{ role: 'user', content: 'Is 17 prime?' }], temperature: 0, maxOutputTokens: 10 });
    let streamed = '';
    for await (const part of stream.fullStream) if (part.type === 'reasoning-delta') streamed += part.text;
    expect(streamed).toBe(expected.reasoning ?? '');
    expect(await stream.reasoningText).toBe(expected.reasoning ?? undefined);
  });
});
