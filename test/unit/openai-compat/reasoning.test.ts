// Reasoning on the chat route without the engine, with the real Qwen3 tokenizer and chat template:
// the ThinkingSpec the input processor fills (tag ids, whether the prompt opened the block, the
// budget from reasoning_effort / max_thinking_tokens), and a real thinking-then-tool-call output
// detokenized token by token by the real OutputProcessor, shaped by the route's chunker and
// accumulated by the official SDK's ChatCompletionStream, which must match the non-streaming message.

import type OpenAI from 'openai';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SequenceUpdate, ThinkingSpec } from '../../../src/contracts/generate.js';
import type { GenerationEvent } from '../../../src/contracts/text-generation.js';
import { InputProcessor } from '../../../src/engine-client/input-processor.js';
import { OutputProcessor } from '../../../src/engine-client/output-processor.js';
import { qwen3 as qwen3Format } from '../../../src/reasoning/index.js';
import { hermes } from '../../../src/tool-calls/index.js';
import { readModelFiles, type ModelFiles } from '../../../src/tokenizer/model-files.js';
import { ChatChunks, chatMessage } from '../../../openai-compat/tool-calls.js';
import type { ChatToolPlan } from '../../../src/server/kit/tool-plan.js';
import { qwen3ModelDir } from '../../support/qwen3-fixture.js';

const THINK = 151667;
const END_THINK = 151668;

let qwen3: InputProcessor;
/** Qwen3's template whose generation prompt opens the block (as Qwen3-Thinking-2507's does). */
let opening: InputProcessor;
let files: ModelFiles;
beforeAll(async () => {
  files = await readModelFiles(qwen3ModelDir());
  qwen3 = InputProcessor.fromFiles(files, { reasoningFormat: qwen3Format });
  const template = files.tokenizerConfig.chat_template as string;
  const opened = template.replace("{{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}", "{{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- else %}\n        {{- '<think>\\n' }}\n    {%- endif %}");
  expect(opened).not.toBe(template);
  opening = InputProcessor.fromFiles({ ...files, chatTemplateFile: opened }, { reasoningFormat: qwen3Format }, qwen3.tokenizer);
}, 60_000);

const chat = (sampling: Record<string, unknown> = {}, kwargs: Record<string, unknown> | null = null) => ({
  id: 'r',
  prompt: { kind: 'chat' as const, messages: [{ role: 'user', content: 'Hi' }], chatTemplateKwargs: kwargs },
  sampling,
});

describe('the ThinkingSpec a reasoning model’s requests carry', () => {
  it('names the tag ids and sees whether the rendered prompt opened the block', () => {
    const plain = qwen3.process(chat());
    expect(plain.request.thinking).toEqual<ThinkingSpec>({ startTokenIds: [THINK], endTokenIds: [END_THINK], startsInside: false, budget: null });
    const opened = opening.process(chat());
    expect(opened.promptText!.endsWith('<think>\n')).toBe(true);
    expect(opened.request.thinking).toMatchObject({ startsInside: true, budget: null });
  });

  it('reasoning_effort none renders the template with thinking off (a closed empty block) and a zero budget', () => {
    const off = opening.process(chat({ reasoning_effort: 'none' }));
    expect(off.promptText!.endsWith('<think>\n\n</think>\n\n')).toBe(true);
    expect(off.request.thinking).toMatchObject({ startsInside: false, budget: 0 });
    // The client's own switch wins over the effort's.
    expect(opening.process(chat({ reasoning_effort: 'none' }, { enable_thinking: true })).request.thinking).toMatchObject({ startsInside: true, budget: 0 });
  });

  it('each effort has its budget; max_thinking_tokens wins', () => {
    const budget = (sampling: Record<string, unknown>) => qwen3.process(chat(sampling)).request.thinking!.budget;
    expect([budget({ reasoning_effort: 'minimal' }), budget({ reasoning_effort: 'low' }), budget({ reasoning_effort: 'medium' }), budget({ reasoning_effort: 'high' })]).toEqual([
      256,
      1024,
      4096,
      null,
    ]);
    expect(budget({ reasoning_effort: 'low', max_thinking_tokens: 7 })).toBe(7);
    expect(budget({ max_thinking_tokens: 0 })).toBe(0);
  });

  it('leaves text prompts and models without a reasoning parser alone', () => {
    expect(qwen3.process({ id: 'r', prompt: { kind: 'text', text: 'Hi' } }).request.thinking).toBeUndefined();
    expect(InputProcessor.fromFiles(files, {}, qwen3.tokenizer).process(chat({ reasoning_effort: 'low' })).request.thinking).toBeUndefined();
  });
});

const OUTPUT = '<think>\nThe user wants weather. I will call <tool_call> later.\n</think>\n\nChecking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const REASONING = 'The user wants weather. I will call <tool_call> later.';
const PLAN: ChatToolPlan = { tools: null, format: hermes, maxCalls: undefined };

/** The events the LLM backend yields for `text` generated one token per step and ending with EOS. */
function generationEvents(text: string, thinking: ThinkingSpec): GenerationEvent[] {
  const ids = qwen3.tokenizer.encode(text, { add_special_tokens: false }).ids;
  const eos = qwen3.info.eosTokenIds[0]!;
  const output = new OutputProcessor(qwen3.tokenizer, [1, 2, 3], { stop: [], includeStopStrInOutput: false, skipSpecialTokens: true }, thinking);
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

describe('the chat route reading a real thinking-then-tool-call generation', () => {
  const thinking: ThinkingSpec = { startTokenIds: [THINK], endTokenIds: [END_THINK], startsInside: false, budget: null };
  const reasoning = { format: qwen3Format, startsInside: false };

  it('non-streaming: reasoning_content and reasoning hold the thinking; the call in it stays text, the answer’s call is read', () => {
    const events = generationEvents(OUTPUT, thinking);
    expect(events.map((e) => e.text).join('')).toBe(OUTPUT);
    const { message, calls } = chatMessage(PLAN, OUTPUT, reasoning);
    expect(calls).toBe(1);
    expect(message).toMatchObject({
      role: 'assistant',
      content: 'Checking.\n',
      reasoning_content: REASONING,
      reasoning: REASONING,
      tool_calls: [{ function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
    });
    // Usage: the tokens between <think> and </think>.
    const inside = qwen3.tokenizer.encode(OUTPUT.slice('<think>'.length, OUTPUT.indexOf('</think>')), { add_special_tokens: false }).ids.length;
    expect(events.at(-1)!.usage.reasoningTokens).toBe(inside);
  });

  it('streaming: reasoning deltas first, never in content; the SDK accumulates the same message', async () => {
    const chunker = new ChatChunks(PLAN, 1, reasoning);
    const head = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'qwen3', system_fingerprint: 'fp_x' };
    const chunks = generationEvents(OUTPUT, thinking).flatMap((event) => (chunker.entries(0, event, []) ?? []).map((choice) => ({ ...head, choices: [choice] })));
    const deltas = chunks.map((c) => c.choices[0]!.delta as { role?: string; content?: string | null; reasoning_content?: string; reasoning?: string });
    expect(deltas[0]).toMatchObject({ role: 'assistant', content: null });
    expect(deltas.map((d) => d.reasoning_content ?? '').join('')).toBe(REASONING);
    expect(deltas.map((d) => d.reasoning ?? '').join('')).toBe(REASONING);
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Checking.\n');
    const lastReasoning = deltas.map((d) => d.reasoning_content !== undefined).lastIndexOf(true);
    expect(deltas.findIndex((d) => typeof d.content === 'string')).toBeGreaterThan(lastReasoning);

    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(`${JSON.stringify(chunk)}\n`));
        controller.close();
      },
    });
    const completion: OpenAI.ChatCompletion = await ChatCompletionStream.fromReadableStream(body).finalChatCompletion();
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    expect(completion.choices[0]!.message.content).toBe('Checking.\n');
    expect(completion.choices[0]!.message.tool_calls?.map((c) => c.type === 'function' && c.function.name)).toEqual(['get_weather']);
  });
});
