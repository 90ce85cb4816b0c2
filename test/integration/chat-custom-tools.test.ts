// OpenAI's `custom` tools on chat completions through the official OpenAI SDK on the real server:
// `{type: "custom", custom: {name, format}}` with a regex or Lark grammar. Forced
// (`tool_choice: {type: "custom", custom: {name}}`) the output is one custom call whose input
// holds to the format, whole and streamed in pieces; under `required` and `auto` each custom
// call's input holds to it too, beside function calls whose arguments hold to their schemas,
// at temperature 1 from the random tiny model over several seeds. Custom calls are taken back as
// history; what cannot be enforced is a 400 naming the field.
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { useLlmServerWithClient } from '../support/generation.js';

const llm = useLlmServerWithClient();

type Tool = OpenAI.Chat.ChatCompletionTool;
const TICKET: Tool = { type: 'custom', custom: { name: 'ticket', description: 'Files a ticket id.', format: { type: 'grammar', grammar: { syntax: 'regex', definition: '[A-Z]{2,3}-[0-9]{1,4}' } } } };
const SHELL: Tool = {
  type: 'custom',
  custom: {
    name: 'shell',
    format: { type: 'grammar', grammar: { syntax: 'lark', definition: ['start: cmd (" " arg)~1..2', '?cmd: "ls" | "cat"', 'arg: WORD ["/" WORD]', 'WORD: /[a-z_]{1,6}/'].join('\n') } },
  },
};
const LOOKUP: Tool = {
  type: 'function',
  function: {
    name: 'lookup',
    parameters: { type: 'object', properties: { id: { type: 'integer', minimum: 1, maximum: 99 }, tag: { type: 'string', enum: ['a', 'b'] } }, required: ['id', 'tag'], additionalProperties: false },
  },
};
const validLookup = new Ajv2020({ strict: false }).compile((LOOKUP as OpenAI.Chat.ChatCompletionFunctionTool).function.parameters!);
const INPUTS: Readonly<Record<string, RegExp>> = { ticket: /^[A-Z]{2,3}-[0-9]{1,4}$/, shell: /^(ls|cat)( [a-z_]{1,6}(\/[a-z_]{1,6})?){1,2}$/ };
const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'File it.' }];
/** `<tool_call>` in the test model's vocabulary (Qwen3's): biased up, the random model opens a call at once under auto. */
const TOOL_CALL_TOKEN = 151657;

/** Every call holds to its tool; returns how many there were. */
function expectCallsValid(calls: readonly OpenAI.Chat.ChatCompletionMessageToolCall[] | undefined): number {
  for (const call of calls ?? []) {
    if (call.type === 'custom') expect(call.custom.input).toMatch(INPUTS[call.custom.name]!);
    else expect(validLookup(JSON.parse(call.function.arguments)), call.function.arguments).toBe(true);
  }
  return calls?.length ?? 0;
}

describe('custom tools on chat completions', () => {
  it('forced: one custom call whose input holds to the regex (temperature 1)', async () => {
    for (let seed = 0; seed < 6; seed++) {
      const completion = await llm.client.chat.completions.create({
        model: 'qwen3',
        messages,
        tools: [TICKET, LOOKUP],
        tool_choice: { type: 'custom', custom: { name: 'ticket' } },
        temperature: 1,
        seed,
        max_tokens: 40,
      });
      const [choice] = completion.choices;
      expect(choice!.finish_reason).toBe('tool_calls');
      expect(choice!.message.tool_calls).toHaveLength(1);
      const call = choice!.message.tool_calls![0]!;
      expect(call).toMatchObject({ type: 'custom', custom: { name: 'ticket' } });
      expect(call.id).toMatch(/^call_/);
      expectCallsValid(choice!.message.tool_calls);
    }
  });

  it('forced and streamed: the input arrives in pieces that add up to a sentence of the Lark grammar', async () => {
    const stream = await llm.client.chat.completions.create({
      model: 'qwen3',
      messages,
      tools: [SHELL],
      tool_choice: { type: 'custom', custom: { name: 'shell' } },
      temperature: 1,
      seed: 2,
      max_tokens: 60,
      stream: true,
    });
    let opened: OpenAI.Chat.ChatCompletionChunk.Choice.Delta.ToolCall | undefined;
    const pieces: string[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (call.id !== undefined) opened = call;
        else pieces.push(call.custom!.input!);
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(opened).toMatchObject({ index: 0, type: 'custom', custom: { name: 'shell', input: '' } });
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toMatch(INPUTS.shell!);
    expect(finish).toBe('tool_calls');
  });

  it('required: one or more calls, custom and function, each valid for its tool (temperature 1)', async () => {
    const names = new Set<string>();
    let completed = 0;
    for (let seed = 0; seed < 8; seed++) {
      const completion = await llm.client.chat.completions.create({ model: 'qwen3', messages, tools: [LOOKUP, TICKET, SHELL], tool_choice: 'required', temperature: 1, seed, max_tokens: 120 });
      const [choice] = completion.choices;
      // A call cut by max_tokens is incomplete, not invalid.
      if (choice!.finish_reason !== 'tool_calls') continue;
      completed += 1;
      expect(expectCallsValid(choice!.message.tool_calls)).toBeGreaterThan(0);
      for (const call of choice!.message.tool_calls!) names.add(call.type === 'custom' ? call.custom.name : call.function.name);
    }
    expect(completed).toBeGreaterThanOrEqual(6);
    expect([...names].some((name) => name !== 'lookup')).toBe(true);
  });

  it('auto: text when the model answers, and a call it opens holds to its tool, whole and streamed', async () => {
    const create = (seed: number, bias: Record<string, number>, max: number) =>
      llm.client.chat.completions.create({
        model: 'qwen3',
        messages,
        tools: [TICKET, SHELL, LOOKUP],
        tool_choice: 'auto',
        parallel_tool_calls: false,
        temperature: 1,
        seed,
        max_tokens: max,
        logit_bias: bias,
      });
    const text = await create(0, {}, 16);
    expect(text.choices[0]!.message.tool_calls).toBeUndefined();
    expect(text.choices[0]!.message.content).not.toBe('');
    for (let seed = 0; seed < 5; seed++) {
      const completion = await create(seed, { [TOOL_CALL_TOKEN]: 100 }, 120);
      expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
      expect(expectCallsValid(completion.choices[0]!.message.tool_calls)).toBe(1);
    }
    // Streamed, a custom call's input comes in one piece once its arguments closed.
    for (let seed = 0; seed < 5; seed++) {
      const stream = await llm.client.chat.completions.create({
        model: 'qwen3',
        messages,
        tools: [TICKET, SHELL],
        tool_choice: 'auto',
        parallel_tool_calls: false,
        temperature: 1,
        seed,
        max_tokens: 120,
        logit_bias: { [TOOL_CALL_TOKEN]: 100 },
        stream: true,
      });
      const deltas: OpenAI.Chat.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
      for await (const chunk of stream) deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
      const [opened, ...rest] = deltas;
      expect(opened).toMatchObject({ index: 0, type: 'custom' });
      expect(rest).toHaveLength(1);
      expect(rest[0]!.custom!.input).toMatch(INPUTS[opened!.custom!.name!]!);
    }
  });

  it('takes custom calls back as history', async () => {
    const completion = await llm.client.chat.completions.create({
      model: 'qwen3',
      tools: [TICKET],
      messages: [
        { role: 'user', content: 'File it.' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'custom', custom: { name: 'ticket', input: 'AB-12' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'filed' },
      ],
      max_tokens: 4,
      temperature: 0,
    });
    expect(completion.choices[0]!.finish_reason).toBe('length');
  });

  it('refuses what it cannot enforce and a choice of no such tool, by field', async () => {
    const lark = { type: 'custom' as const, custom: { name: 'g', format: { type: 'grammar' as const, grammar: { syntax: 'lark' as const, definition: 'start: "ls"i' } } } };
    for (const tool_choice of ['required', 'auto', { type: 'custom', custom: { name: 'g' } }] as const) {
      const refusal = await llm.client.chat.completions
        .create({ model: 'qwen3', messages, tools: [lark], tool_choice: tool_choice as OpenAI.Chat.ChatCompletionToolChoiceOption })
        .catch((e: unknown) => e);
      expect(refusal).toBeInstanceOf(OpenAI.BadRequestError);
      expect(refusal).toMatchObject({ param: 'tools[0].custom.format.grammar.definition', code: 'unsupported_parameter' });
    }
    const unknown = await llm.client.chat.completions.create({ model: 'qwen3', messages, tools: [TICKET], tool_choice: { type: 'custom', custom: { name: 'other' } } }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ status: 400, param: 'tool_choice.custom.name' });
  });
});
