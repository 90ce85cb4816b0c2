import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConveyorError } from '../../../src/errors.js';
import type { ChatMessage } from '../../../src/contracts/text-generation.js';
import { readModelFiles } from '../../../src/tokenizer/model-files.js';
import { InputProcessor, type ProcessInput } from '../../../src/engine-client/input-processor.js';
import { ENDOFTEXT, IM_END, IM_START, QWEN3_CONFIG, qwen3Files, qwen3ModelDir, qwen3Tokenizer } from '../../support/qwen3-fixture.js';

let qwen3: InputProcessor;
beforeAll(async () => {
  qwen3 = await InputProcessor.load(qwen3ModelDir());
});

/** A processor over the same tokenizer with other configs (building a tokenizer takes seconds). */
function variant(over: { config?: object | null; generationConfig?: object | null; maxModelLen?: number }): InputProcessor {
  const files = {
    ...qwen3Files(),
    config: (over.config === undefined ? QWEN3_CONFIG : over.config) as Record<string, unknown> | null,
    generationConfig: (over.generationConfig ?? null) as Record<string, unknown> | null,
  };
  return InputProcessor.fromFiles(files, over.maxModelLen === undefined ? {} : { maxModelLen: over.maxModelLen }, qwen3Tokenizer());
}

function rejection(run: () => unknown): ConveyorError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConveyorError);
    return error as ConveyorError;
  }
  throw new Error('accepted');
}

const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'What is 2 + 2?' },
  { role: 'assistant', content: '<think>\nSimple arithmetic.\n</think>\n\n2 + 2 = 4.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'And times 3?' },
      { type: 'text', text: 'Be brief.' },
    ],
  },
];

describe('model directory facts', () => {
  it('reads EOS ids, context length, vocabulary and sampling defaults', () => {
    expect(qwen3.info).toMatchObject({
      contextLength: 40_960,
      eosTokenIds: [IM_END, ENDOFTEXT],
      vocabSize: 151_669,
      modelVocabSize: 151_936,
      specialTokens: { bos_token: null, eos_token: '<|im_end|>', pad_token: '<|endoftext|>', unk_token: null },
      samplingDefaults: { temperature: 0.6, topP: 0.95, topK: 20 },
    });
  });

  it('accepts eos_token_id as an int, falls back to config.json, and always adds the tokenizer eos', () => {
    expect(variant({ generationConfig: { eos_token_id: ENDOFTEXT } }).info.eosTokenIds).toEqual([ENDOFTEXT, IM_END]);
    expect(variant({ generationConfig: null }).info.eosTokenIds).toEqual([IM_END]);
    expect(variant({ generationConfig: null }).info.samplingDefaults).toEqual({});
  });

  it('takes the context from config.json, else tokenizer model_max_length, capped by max_model_len', () => {
    expect(variant({ config: null }).info.contextLength).toBe(131_072);
    expect(variant({ maxModelLen: 4096 }).info.contextLength).toBe(4096);
    expect(() => variant({ maxModelLen: 50_000 })).toThrow(/max_model_len 50000 exceeds the model's context length 40960/);
  });

  it('prefers chat_template.jinja beside the tokenizer config', async () => {
    const dir = qwen3ModelDir();
    writeFileSync(join(dir, 'chat_template.jinja'), '{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}');
    const files = await readModelFiles(dir);
    const processor = InputProcessor.fromFiles(files, {}, qwen3Tokenizer());
    expect(processor.applyChatTemplate([{ role: 'user', content: 'hi' }])).toBe('[user] hi\n');
  });
});

describe('Qwen3 chat template', () => {
  it('renders a multi-turn conversation in the Qwen3 format with the generation prompt', () => {
    expect(qwen3.applyChatTemplate(CONVERSATION)).toBe(
      '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' +
        '<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n' +
        // Reasoning of turns before the last user message is dropped by the template.
        '<|im_start|>assistant\n2 + 2 = 4.<|im_end|>\n' +
        '<|im_start|>user\nAnd times 3?\nBe brief.<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });

  it('honours add_generation_prompt and enable_thinking', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hi' }];
    expect(qwen3.applyChatTemplate(messages, { addGenerationPrompt: false })).toBe('<|im_start|>user\nHi<|im_end|>\n');
    expect(qwen3.applyChatTemplate(messages, { chatTemplateKwargs: { enable_thinking: false } })).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
    expect(qwen3.applyChatTemplate(messages, { chatTemplateKwargs: { enable_thinking: true } })).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
  });

  it('renders tools, assistant tool calls and tool results', () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
      { role: 'tool', tool_call_id: 'c1', content: '{"temp": 21}' },
    ];
    const text = qwen3.applyChatTemplate(messages, { tools });
    expect(text.startsWith('<|im_start|>system\n# Tools\n\nYou may call one or more functions')).toBe(true);
    expect(text).toContain('<tools>\n{"type": "function", "function": {"name": "get_weather"');
    expect(text).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n');
    expect(text).toContain('<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
    // An empty tools list means no tools.
    expect(qwen3.applyChatTemplate([{ role: 'user', content: 'x' }], { tools: [] })).toBe('<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n');
  });

  it('renders the developer role as system for a template that would drop it (Qwen3)', () => {
    expect(
      qwen3.applyChatTemplate(
        [
          { role: 'developer', content: 'Rules.' },
          { role: 'user', content: 'Go' },
        ],
        { addGenerationPrompt: false },
      ),
    ).toBe('<|im_start|>system\nRules.<|im_end|>\n<|im_start|>user\nGo<|im_end|>\n');
  });

  it('keeps developer for a template that renders it, passes null content through, and gives "" where the template cannot take null', () => {
    const withTemplate = (template: string) => InputProcessor.fromFiles({ ...qwen3Files(), chatTemplateFile: template }, {}, qwen3Tokenizer());
    // A template that writes every role (as Llama 3's do) gets developer as it is.
    const generic = withTemplate("{% for m in messages %}[{{ m.role }}:{{ m.content if m.content is not none else 'NONE' }}]{% endfor %}");
    expect(
      generic.applyChatTemplate([
        { role: 'developer', content: 'Rules.' },
        { role: 'user', content: 'Go' },
        { role: 'assistant', content: null, tool_calls: [] },
      ]),
    ).toBe('[developer:Rules.][user:Go][assistant:NONE]');
    // One that raises on developer gets it as system (Gemma 3's role check does).
    const strict = withTemplate("{% for m in messages %}{% if m.role not in ['system', 'user', 'assistant'] %}{{ raise_exception('bad role') }}{% endif %}[{{ m.role }}]{% endfor %}");
    expect(
      strict.applyChatTemplate([
        { role: 'developer', content: 'Rules.' },
        { role: 'user', content: 'Go' },
      ]),
    ).toBe('[system][user]');
    // One that cannot take null content (`content | trim`) renders it as "".
    const trimming = withTemplate('{% for m in messages %}[{{ m.content | trim }}]{% endfor %}');
    expect(
      trimming.applyChatTemplate([
        { role: 'user', content: ' Go ' },
        { role: 'assistant', content: null },
      ]),
    ).toBe('[Go][]');
  });

  it('rejects malformed messages naming messages', () => {
    const cases: [unknown, RegExp][] = [
      [[], /messages must be a non-empty array/],
      [[{ role: 'robot', content: 'x' }], /messages\[0\]\.role must be one of system, developer, user, assistant, tool, got "robot"/],
      [[{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }], /messages\[0\]\.content\[0\]: content type "image_url" is not supported \(text only\)/],
      [[{ role: 'user', content: 42 }], /messages\[0\]\.content must be a string or an array of content parts/],
      [['hello'], /messages\[0\] must be an object/],
    ];
    for (const [messages, message] of cases) {
      const error = rejection(() => qwen3.applyChatTemplate(messages as ChatMessage[]));
      expect(error.param).toBe('messages');
      expect(error.message).toMatch(message);
    }
    expect(rejection(() => qwen3.applyChatTemplate([{ role: 'user', content: 'x' }], { chatTemplateKwargs: { messages: [] } })).param).toBe('chat_template_kwargs');
  });

  it('fails clearly for a model without a chat template', () => {
    const files = { ...qwen3Files(), tokenizerConfig: { ...qwen3Files().tokenizerConfig, chat_template: null } };
    const processor = InputProcessor.fromFiles(files, {}, qwen3Tokenizer());
    expect(rejection(() => processor.applyChatTemplate([{ role: 'user', content: 'x' }])).message).toMatch(/no chat template/);
  });
});

describe('tokenization', () => {
  it('tokenizes a chat without adding special tokens beyond the template', () => {
    const { tokenIds } = qwen3.tokenize({ kind: 'chat', messages: [{ role: 'user', content: 'Hello' }] });
    const assistant = qwen3.tokenizer.encode('assistant', { add_special_tokens: false }).ids;
    const newline = qwen3.tokenizer.encode('\n', { add_special_tokens: false }).ids;
    expect(tokenIds[0]).toBe(IM_START);
    const generationPrompt = [IM_START, ...assistant, ...newline];
    expect(tokenIds.slice(-generationPrompt.length)).toEqual(generationPrompt);
    expect(tokenIds.filter((id) => id === IM_START)).toHaveLength(2);
    expect(tokenIds.filter((id) => id === IM_END)).toHaveLength(1);
  });

  it('tokenizes text prompts and validates token-id prompts', () => {
    expect(qwen3.tokenize({ kind: 'text', text: 'Hello world' }).tokenIds).toEqual([9707, 1879]);
    expect(qwen3.tokenize({ kind: 'tokens', tokenIds: [9707, 1879] })).toEqual({ tokenIds: [9707, 1879], text: null });
    const unknown = rejection(() => qwen3.tokenize({ kind: 'tokens', tokenIds: [9707, 151_700] }));
    expect(unknown).toMatchObject({ code: 'INVALID_ARG', param: 'prompt' });
    expect(unknown.message).toMatch(/token id 151700 is not in the vocabulary \(0\.\.151668\)/);
    expect(rejection(() => qwen3.tokenize({ kind: 'tokens', tokenIds: [1.5] })).param).toBe('prompt');
  });
});

describe('process', () => {
  const base: ProcessInput = { id: 'req-1', prompt: { kind: 'text', text: 'Hello world' } };

  it('builds the GenerateRequest with model defaults and the remaining context as max_tokens', () => {
    const { request, output, promptText } = qwen3.process({ ...base, sampling: { seed: 5, stop: ['\n'], stop_token_ids: [ENDOFTEXT], priority: 2, cache_salt: 'tenant' } });
    expect(request).toEqual({
      id: 'req-1',
      promptTokenIds: [9707, 1879],
      sampling: { temperature: 0.6, topK: 20, topP: 0.95, minP: 0, repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0, logitBias: null, logprobs: false, topLogprobs: 0, seed: 5 },
      stop: { maxTokens: 40_960 - 2, minTokens: 0, eosTokenIds: [IM_END, ENDOFTEXT], ignoreEos: false, stopTokenIds: [ENDOFTEXT] },
      priority: 2,
      cacheSalt: 'tenant',
    });
    expect(output).toEqual({ stop: ['\n'], includeStopStrInOutput: false, skipSpecialTokens: true });
    expect(promptText).toBe('Hello world');
  });

  it('caps the default output by max_new_tokens', () => {
    expect(variant({ generationConfig: { max_new_tokens: 100 } }).process(base).request.stop.maxTokens).toBe(100);
  });

  it('rejects a prompt that fills the context before anything is scheduled', () => {
    const small = variant({ maxModelLen: 8 });
    const text = 'one two three four five six seven eight nine ten';
    const error = rejection(() => small.process({ ...base, prompt: { kind: 'text', text } }));
    expect(error.code).toBe('CONTEXT_LENGTH_EXCEEDED');
    expect(error.param).toBe('prompt');
    expect(error.message).toMatch(/maximum context length is 8 tokens\. However, your prompt has 1\d tokens/);
    const chat = rejection(() => small.process({ ...base, prompt: { kind: 'chat', messages: [{ role: 'user', content: text }] } }));
    expect(chat).toMatchObject({ code: 'CONTEXT_LENGTH_EXCEEDED', param: 'messages' });
    expect(chat.httpStatus).toBe(400);
  });

  it('rejects max_tokens beyond the remaining context and accepts it exactly at the limit', () => {
    const small = variant({ maxModelLen: 10 });
    expect(small.process({ ...base, sampling: { max_tokens: 8 } }).request.stop.maxTokens).toBe(8);
    const error = rejection(() => small.process({ ...base, sampling: { max_tokens: 9 } }));
    expect(error).toMatchObject({ code: 'CONTEXT_LENGTH_EXCEEDED', param: 'max_tokens' });
    expect(error.message).toBe("max_tokens is too large: 9. This model's maximum context length is 10 tokens and your prompt has 2 tokens (9 > 10 - 2).");
    expect(rejection(() => small.process({ ...base, sampling: { max_tokens: 20 }, wireNames: { max_tokens: 'max_completion_tokens' } })).param).toBe('max_completion_tokens');
    expect(rejection(() => small.process({ ...base, sampling: { min_tokens: 9 } })).param).toBe('min_tokens');
  });

  it('rejects invalid sampling values and empty prompts before tokenizing', () => {
    expect(rejection(() => qwen3.process({ ...base, sampling: { temperature: -1 } }))).toMatchObject({ code: 'INVALID_ARG', param: 'temperature' });
    expect(rejection(() => qwen3.process({ ...base, sampling: { logit_bias: { '200000': 1 } } }))).toMatchObject({ param: 'logit_bias' });
    expect(rejection(() => qwen3.process({ ...base, prompt: { kind: 'text', text: '' } }))).toMatchObject({ code: 'INVALID_ARG', param: 'prompt' });
    expect(rejection(() => qwen3.process({ ...base, prompt: { kind: 'tokens', tokenIds: [] } }))).toMatchObject({ param: 'prompt' });
  });

  it('hands the output side a detokenizer that uses the prompt as context', () => {
    const { request, output } = qwen3.process({ ...base, prompt: { kind: 'chat', messages: [{ role: 'user', content: '你好' }] } });
    const detok = qwen3.createDetokenizer(output, request.promptTokenIds);
    const ids = qwen3.tokenizer.encode('你好！🪿 Nice to meet you.', { add_special_tokens: false }).ids;
    const text = ids.map((id) => detok.push([id])).join('') + detok.push([IM_END]) + detok.flush();
    expect(text).toBe('你好！🪿 Nice to meet you.');
  });
});
