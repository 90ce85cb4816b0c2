// Tools on the chat route without the engine: Qwen3's real chat template rendering tools and a
// tool-call history (exact text), and the streamed answer for a tool-call text tokenized by the
// real Qwen3 tokenizer, detokenized token by token by the real OutputProcessor, shaped by the
// route's chunker and accumulated by the official SDK's ChatCompletionStream — which must end
// with the same calls as the non-streaming message.

import type OpenAI from 'openai';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SequenceUpdate } from '../../../src/contracts/generate.js';
import type { ChatMessage, GenerationEvent } from '../../../src/contracts/text-generation.js';
import { InputProcessor } from '../../../src/engine-client/input-processor.js';
import { OutputProcessor } from '../../../src/engine-client/output-processor.js';
import { hermes } from '../../../src/tool-calls/index.js';
import { parseToolRequest } from '../../../src/vocabulary/index.js';
import { ChatChunks, chatMessage } from '../../../openai-compat/tool-calls.js';
import type { ChatToolPlan } from '../../../src/server/kit/tool-plan.js';
import { qwen3ModelDir } from '../../support/qwen3-fixture.js';

let qwen3: InputProcessor;
beforeAll(async () => {
  qwen3 = await InputProcessor.load(qwen3ModelDir());
}, 60_000);

const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

describe("Qwen3's chat template with tools", () => {
  it('renders checked tools, assistant tool_calls (arguments as wire strings) and consecutive tool results exactly', () => {
    const { tools } = parseToolRequest({ tools: [weatherTool] });
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Paris and Oslo?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '21C' },
      { role: 'tool', tool_call_id: 'call_2', content: '9C' },
    ];
    expect(qwen3.applyChatTemplate(messages, { tools })).toBe(
      '<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
        'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
        '{"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n' +
        '</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\nParis and Oslo?<|im_end|>\n' +
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\n21C\n</tool_response>\n<tool_response>\n9C\n</tool_response><|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });
});

const PLAN: ChatToolPlan = { tools: null, format: hermes, maxCalls: undefined };
const OUTPUT =
  'Checking both.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo, NO"}}\n</tool_call>';

/** The events the LLM backend yields for `text` generated one token per step and ending with EOS. */
function generationEvents(text: string): GenerationEvent[] {
  const ids = qwen3.tokenizer.encode(text, { add_special_tokens: false }).ids;
  const eos = qwen3.info.eosTokenIds[0]!;
  const output = new OutputProcessor(qwen3.tokenizer, [1, 2, 3], { stop: [], includeStopStrInOutput: false, skipSpecialTokens: true });
  const steps = [...ids.map((id) => [id]), [eos]];
  return steps.map((newTokenIds, i) => {
    const last = i === steps.length - 1;
    const update: SequenceUpdate = {
      requestId: 'r',
      newTokenIds,
      logprobs: null,
      finishReason: last ? 'stop' : null,
      stopTokenId: last ? eos : null,
      numPromptTokens: 3,
      numOutputTokens: i + 1,
      numCachedTokens: 0,
      numPreemptions: 0,
      arrivalTimeMs: 0,
      scheduledTimeMs: 0,
      firstTokenTimeMs: 0,
    };
    return output.process(update, i);
  });
}

describe('the chat route reading a real tool-call generation', () => {
  it('non-streaming: message.tool_calls with ids, content outside the calls, finish_reason tool_calls', () => {
    const events = generationEvents(OUTPUT);
    const text = events.map((e) => e.text).join('');
    expect(text).toBe(OUTPUT);
    const { message, calls } = chatMessage(PLAN, text);
    expect(calls).toBe(2);
    expect(message).toMatchObject({
      role: 'assistant',
      content: 'Checking both.\n\n',
      tool_calls: [
        { type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
        { type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo, NO"}' } },
      ],
    });
    const ids = (message.tool_calls as { id: string }[]).map((c) => c.id);
    for (const id of ids) expect(id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(new Set(ids).size).toBe(2);
  });

  it('streaming: the SDK accumulates the same calls, names first, and never sees tag text as content', async () => {
    const chunker = new ChatChunks(PLAN, 1);
    const head = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'qwen3', system_fingerprint: 'fp_x' };
    const chunks = generationEvents(OUTPUT).flatMap((event) => (chunker.entries(0, event, []) ?? []).map((choice) => ({ ...head, choices: [choice] })));
    const deltas = chunks.map((c) => c.choices[0]!.delta as { content?: string | null; tool_calls?: { index: number; id?: string; function: { name?: string; arguments: string } }[] });
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Checking both.\n\n');
    const openings = deltas.flatMap((d) => d.tool_calls ?? []).filter((t) => t.id !== undefined);
    expect(openings.map((t) => [t.index, t.function.name, t.function.arguments])).toEqual([
      [0, 'get_weather', ''],
      [1, 'get_weather', ''],
    ]);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('tool_calls');
    expect(chunks.slice(0, -1).every((c) => c.choices[0]!.finish_reason === null)).toBe(true);

    const lines = chunks.map((c) => `${JSON.stringify(c)}\n`);
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const line of lines) controller.enqueue(new TextEncoder().encode(line));
        controller.close();
      },
    });
    const stream = ChatCompletionStream.fromReadableStream(body);
    const completion: OpenAI.ChatCompletion = await stream.finalChatCompletion();
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBe('Checking both.\n\n');
    expect(choice.message.tool_calls?.map((c) => c.type === 'function' && [c.function.name, c.function.arguments])).toEqual([
      ['get_weather', '{"city": "Paris"}'],
      ['get_weather', '{"city": "Oslo, NO"}'],
    ]);
  });
});
