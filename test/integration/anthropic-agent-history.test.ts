// What Claude Code sends and reads over /v1/messages, through the official Anthropic SDK:
// usage.cache_read_input_tokens from prefix-cache hits (a repeated conversation reads its
// prompt's full blocks from the cache; cache_creation_input_tokens stays 0, since nothing is
// written at a client's request), and a tool loop's history carrying `thinking` (with its
// signature) and `redacted_thinking` blocks: accepted, the thinking given to the template as the
// turn's reasoning (Qwen3's renders it after the last user message), the redacted one left out.

import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let client: Anthropic;

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  server = await startTestServer(repository);
  client = new Anthropic({ baseURL: server.http, apiKey: 'unused', maxRetries: 0 });
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

describe('usage from the prefix cache', () => {
  it('reads a repeated prompt from the cache: cache_read_input_tokens, the rest input_tokens, nothing created', async () => {
    const system = `You are a careful assistant. ${'Answer briefly and precisely. '.repeat(20)}`;
    const request = { model: 'qwen3', max_tokens: 2, temperature: 0, system, messages: [{ role: 'user' as const, content: 'Name a colour.' }] };
    const counted = await client.messages.countTokens({ model: 'qwen3', system, messages: request.messages });
    await client.messages.create(request);
    const again = await client.messages.create(request);
    expect(again.usage.cache_read_input_tokens).toBeGreaterThan(0);
    // Full 16-token blocks are cached; the last partial block is prefilled again.
    expect(again.usage.cache_read_input_tokens! % 16).toBe(0);
    expect(again.usage.input_tokens + again.usage.cache_read_input_tokens!).toBe(counted.input_tokens);
    expect(again.usage.cache_creation_input_tokens).toBe(0);
    // Streamed: message_start carries the same counters.
    const stream = client.messages.stream(request);
    let started: Anthropic.Usage | undefined;
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_start') started = event.message.usage;
    });
    await stream.finalMessage();
    expect(started?.cache_read_input_tokens).toBe(again.usage.cache_read_input_tokens);
  });
});

describe('thinking blocks in history', () => {
  const tools: Anthropic.Tool[] = [{ name: 'read_file', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } }];
  const loop = (assistant: Anthropic.ContentBlockParam[]): Anthropic.MessageParam[] => [
    { role: 'user', content: 'What is in README.md?' },
    { role: 'assistant', content: [...assistant, { type: 'tool_use', id: 'toolu_01', name: 'read_file', input: { path: 'README.md' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: '# Conveyor' }] },
  ];
  const thinking: Anthropic.ThinkingBlockParam = { type: 'thinking', thinking: 'The user wants the file; I should read it first.', signature: 'EqQBCkYIBxgCKkB' };
  const redacted: Anthropic.RedactedThinkingBlockParam = { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' };

  it('accepts thinking and redacted_thinking blocks; the thinking reaches the template, the redacted one does not', async () => {
    const bare = await client.messages.countTokens({ model: 'qwen3', tools, messages: loop([]) });
    const withThinking = await client.messages.countTokens({ model: 'qwen3', tools, messages: loop([thinking]) });
    const withRedacted = await client.messages.countTokens({ model: 'qwen3', tools, messages: loop([redacted]) });
    expect(withThinking.input_tokens).toBeGreaterThan(bare.input_tokens + 5);
    expect(withRedacted.input_tokens).toBe(bare.input_tokens);
    const message = await client.messages.create({ model: 'qwen3', max_tokens: 4, tools, messages: loop([thinking, redacted]), thinking: { type: 'enabled', budget_tokens: 2 } });
    expect(message.type).toBe('message');
    expect(message.usage.input_tokens + message.usage.cache_read_input_tokens!).toBe(withThinking.input_tokens);
  });
});
