// The Messages front end's pure parts: the conversation as template messages (history.ts), the
// block events read from generated text and their fold (content.ts; any chunking of the same
// text gives the same events' fold as the whole text), stop reasons and usage (wire.ts), and the
// error mapping (errors.ts).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ContentBlockStream, foldBlocks, type BlockEvent } from '../../../anthropic-compat/content.js';
import { anthropicFailure } from '../../../anthropic-compat/errors.js';
import { chatHistory } from '../../../anthropic-compat/history.js';
import { messagesUsage, stopOf } from '../../../anthropic-compat/wire.js';
import { Admission } from '../../../src/serving/admission.js';
import type { ChatToolPlan } from '../../../src/server/kit/tool-plan.js';
import { REASONING_FORMATS } from '../../../src/reasoning/index.js';
import { ConveyorError, invalidArg } from '../../../src/errors.js';
import { hermes } from '../../../src/tool-calls/index.js';

const HERMES: ChatToolPlan = { tools: null, format: hermes, maxCalls: undefined };
const PLAIN: ChatToolPlan = { tools: null, format: null, maxCalls: undefined };
const INSIDE = { format: REASONING_FORMATS.deepseek_r1, startsInside: true };

function run(plan: ChatToolPlan, chunks: readonly string[], reasoning: typeof INSIDE | null = null): BlockEvent[] {
  const stream = new ContentBlockStream(plan, reasoning);
  return chunks.flatMap((chunk, i) => stream.push(chunk, i === chunks.length - 1));
}

describe('ContentBlockStream', () => {
  it('text, then a tool_use block per call, with the input as input_json_delta pieces', () => {
    const text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>';
    const events = run(HERMES, [text]);
    expect(events.map((e) => e.type)).toEqual([
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
    ]);
    const blocks = foldBlocks(events);
    expect(blocks).toEqual([
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: expect.stringMatching(/^toolu_[A-Za-z0-9]{24}$/), name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'ping', input: {} },
    ]);
    // Indices count blocks, each start names its own.
    expect(events.filter((e) => e.type === 'content_block_start').map((e) => e.index)).toEqual([0, 1, 2]);
  });

  it('reasoning becomes a thinking block before the answer', () => {
    const blocks = foldBlocks(run(PLAIN, ['I should greet.</think>\n\nHello!'], INSIDE));
    expect(blocks).toEqual([
      { type: 'thinking', thinking: 'I should greet.', signature: '' },
      { type: 'text', text: 'Hello!' },
    ]);
  });

  it('no output is no block at all', () => {
    expect(run(PLAIN, [''])).toEqual([]);
  });

  it('text after the calls is one trimmed text block after them; whitespace between calls is no block', () => {
    const chunks = ['Sure.\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>\n', '<tool_call>\n{"name": "g", "arguments": {"x": 1}}\n</tool_call>', '\n Done. '];
    const blocks = foldBlocks(run(HERMES, chunks));
    expect(blocks.map((b) => (b.type === 'tool_use' ? [b.name, b.input] : b.type === 'text' ? b.text : b.type))).toEqual(['Sure.', ['f', {}], ['g', { x: 1 }], 'Done.']);
  });

  it('any chunking folds to what the whole text folds to (ids aside)', () => {
    const text = 'Hmm, <b>.</think>Sure, \n so.  \n<tool_call>\n{"name": "f", "arguments": {"a": [1, "x}"]}}\n</tool_call>\n<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>';
    const strip = (events: BlockEvent[]) => foldBlocks(events).map((b) => (b.type === 'tool_use' ? { ...b, id: '' } : b));
    const whole = strip(run(HERMES, [text], INSIDE));
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: text.length - 1 }), { maxLength: 8 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const chunks = [0, ...points].map((start, i) => text.slice(start, points[i] ?? text.length));
        expect(strip(run(HERMES, chunks, INSIDE))).toEqual(whole);
      }),
    );
  });
});

describe('chatHistory', () => {
  it('system first, tool_use as tool_calls, tool_result as tool messages in block order, thinking as reasoning_content', () => {
    const messages = chatHistory(
      [{ type: 'text', text: 'Be brief.' }],
      [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Use the tool.', signature: 's' },
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '21C' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'down' }], is_error: true },
            { type: 'text', text: 'Thanks' },
          ],
        },
      ],
    );
    expect(messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        reasoning_content: 'Use the tool.',
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: '21C' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: down' },
      { role: 'user', content: 'Thanks' },
    ]);
  });

  it.each<[string, unknown, unknown, string]>([
    ['empty messages', undefined, [], 'messages'],
    ['a system block that is not text', [{ type: 'image' }], [{ role: 'user', content: 'x' }], 'system.0.type'],
    [
      'a tool_use without input',
      undefined,
      [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f' }] },
        { role: 'user', content: 'y' },
      ],
      'messages.1.content.0.input',
    ],
    ['a tool_result without its id', undefined, [{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }], 'messages.0.content.0.tool_use_id'],
    ['a tool_use in a user turn', undefined, [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] }], 'messages.0.content.0.type'],
  ])('refuses %s', (_, system, messages, param) => {
    expect(() => chatHistory(system, messages)).toThrow(expect.objectContaining({ code: 'INVALID_ARG', param }));
  });
});

describe('wire', () => {
  it('stop reasons: max_tokens for length, stop_sequence for a matched sequence, tool_use once calls were made', () => {
    expect(stopOf('length', null, [], 1)).toEqual({ stop_reason: 'max_tokens', stop_sequence: null });
    expect(stopOf('stop', 'END', ['END'], 0)).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    expect(stopOf('stop', 151645, ['END'], 0)).toEqual({ stop_reason: 'end_turn', stop_sequence: null });
    expect(stopOf('stop', null, [], 2)).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
  });

  it('usage: cached prompt tokens are cache reads, the rest input_tokens', () => {
    expect(messagesUsage({ promptTokens: 40, completionTokens: 5, cachedTokens: 32 })).toEqual({ input_tokens: 8, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 32 });
  });
});

describe('anthropicFailure', () => {
  it('maps the catalog onto Anthropic statuses and types, naming the field', () => {
    expect(anthropicFailure(invalidArg('must be a boolean', 'stream'))).toEqual({
      status: 400,
      body: { type: 'error', error: { type: 'invalid_request_error', message: 'stream: must be a boolean' } },
      headers: {},
    });
    expect(anthropicFailure(new ConveyorError('NOT_FOUND', 'no model')).status).toBe(404);
    expect(anthropicFailure(new ConveyorError('UNAUTHENTICATED', 'no key')).body.error.type).toBe('authentication_error');
    expect(anthropicFailure(new Error('boom'))).toMatchObject({ status: 500, body: { error: { type: 'api_error' } } });
    expect(anthropicFailure(Object.assign(new Error('too big'), { statusCode: 413 }))).toMatchObject({ status: 413, body: { error: { type: 'request_too_large' } } });
  });

  it('load shedding is 529 overloaded_error with retry-after', () => {
    const admission = new Admission({ maxQueuedRequests: 1 });
    admission.enter('m', 1);
    let shed: unknown;
    try {
      admission.enter('m', 1);
    } catch (error) {
      shed = error;
    }
    const failure = anthropicFailure(shed);
    expect(failure.status).toBe(529);
    expect(failure.body.error.type).toBe('overloaded_error');
    expect(Number(failure.headers['retry-after'])).toBeGreaterThan(0);
  });
});
