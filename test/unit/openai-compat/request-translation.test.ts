// The OpenAI front end's pure pieces: which fields are accepted, refused or unknown; streaming
// settings; the completions prompt forms; embedding inputs and their grouping; error bodies.
import { describe, expect, it } from 'vitest';
import { completionPrompts } from '../../../openai-compat/completions.js';
import { groupByLength, requestedDimensions, shortenEmbedding, tokenizeInputs, tokenizeInputsYielding } from '../../../openai-compat/embeddings.js';
import { openaiFailure, OpenAIRequestError } from '../../../openai-compat/errors.js';
import { CHAT_FIELDS, checkFields, choiceCount, COMPLETION_FIELDS, streamSettings } from '../../../openai-compat/request-fields.js';
import { ConveyorError } from '../../../src/errors.js';
import type { TextTokenizer } from '../../../src/contracts/tokenizer.js';

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return openaiFailure(error);
  }
  throw new Error('expected a refusal');
};

describe('checkFields', () => {
  it('accepts the translated fields and the no-op labels', () => {
    expect(() => checkFields({ model: 'm', messages: [], top_k: 3, chat_template_kwargs: {}, user: 'u', metadata: {} }, CHAT_FIELDS)).not.toThrow();
    expect(() => checkFields({ model: 'm', prompt: 'x', echo: true, logprobs: 2 }, COMPLETION_FIELDS)).not.toThrow();
  });

  it('accepts defined fields whose value asks for nothing missing', () => {
    expect(() => checkFields({ tools: [], tool_choice: 'none', response_format: { type: 'text' }, modalities: ['text'], store: false, suffix: '' }, CHAT_FIELDS)).not.toThrow();
  });

  it.each([
    [{ functions: [{ name: 'f' }] }, 'functions'],
    [{ audio: { voice: 'x' } }, 'audio'],
    [{ best_of: 2 }, 'best_of'],
    [{ echo: true }, 'echo'],
  ])('refuses %j as unsupported_parameter', (body, param) => {
    expect(refusal(() => checkFields(body, CHAT_FIELDS))).toMatchObject({ status: 400, body: { error: { param, code: 'unsupported_parameter', type: 'invalid_request_error' } } });
  });

  it('refuses a field nobody defines as unknown_parameter', () => {
    expect(refusal(() => checkFields({ temprature: 1 }, CHAT_FIELDS)).body.error).toMatchObject({ param: 'temprature', code: 'unknown_parameter' });
  });
});

describe('streamSettings and n', () => {
  it('reads include_usage only with stream', () => {
    expect(streamSettings({})).toEqual({ stream: false, includeUsage: false });
    expect(streamSettings({ stream: true, stream_options: { include_usage: true } })).toEqual({ stream: true, includeUsage: true });
    expect(streamSettings({ stream: true, stream_options: {} })).toEqual({ stream: true, includeUsage: false });
    expect(refusal(() => streamSettings({ stream_options: { include_usage: true } })).body.error.param).toBe('stream_options');
    expect(refusal(() => streamSettings({ stream: true, stream_options: { continuous_usage_stats: true } })).body.error.param).toBe('stream_options.continuous_usage_stats');
  });

  it('bounds n', () => {
    expect(choiceCount({})).toBe(1);
    expect(choiceCount({ n: 4 })).toBe(4);
    for (const n of [0, 1.5, 129, '2']) expect(refusal(() => choiceCount({ n })).body.error.param).toBe('n');
  });
});

describe('completionPrompts', () => {
  it('takes the four prompt forms', () => {
    expect(completionPrompts('a', true)).toEqual([{ kind: 'text', text: 'a', addSpecialTokens: true }]);
    expect(completionPrompts(['a', 'b'], false).map((p) => p.kind === 'text' && p.text)).toEqual(['a', 'b']);
    expect(completionPrompts([1, 2], true)).toEqual([{ kind: 'tokens', tokenIds: [1, 2] }]);
    expect(completionPrompts([[1], [2, 3]], true)).toEqual([
      { kind: 'tokens', tokenIds: [1] },
      { kind: 'tokens', tokenIds: [2, 3] },
    ]);
  });

  it.each([[[]], [[[]]], [['a', 1]], [{ text: 'a' }], [null]])('refuses %j naming prompt', (prompt) => {
    expect(refusal(() => completionPrompts(prompt, true)).body.error.param).toBe('prompt');
  });
});

describe('embedding inputs', () => {
  const tokenizer = { encode: (text: string) => ({ ids: [101, ...text.split(' ').map((w) => w.length), 102] }) } as unknown as TextTokenizer;
  const encoder = { tokenizer, maxLength: 6, vocabSize: 200 };

  it('tokenizes strings and passes token ids through', () => {
    expect(tokenizeInputs('ab c', encoder, true)).toEqual([[101, 2, 1, 102]]);
    expect(tokenizeInputs([[5, 6]], encoder, true)).toEqual([[5, 6]]);
    expect(tokenizeInputs([5, 6], encoder, true)).toEqual([[5, 6]]);
  });

  it('refuses empty input, unknown ids and inputs past the context', () => {
    expect(refusal(() => tokenizeInputs([], encoder, true)).body.error.param).toBe('input');
    expect(refusal(() => tokenizeInputs([[500]], encoder, true)).body.error.param).toBe('input');
    expect(refusal(() => tokenizeInputs('a b c d e', encoder, true)).body.error).toMatchObject({ param: 'input', code: 'context_length_exceeded' });
  });

  it('yields to the event loop between inputs once 16K characters were tokenized, with the same ids', async () => {
    const long = { ...encoder, maxLength: 4096 };
    const inputs = Array.from({ length: 40 }, (_, i) => `${'x'.repeat(2000)} ${i}`);
    // Counts the event-loop turns other work gets while the inputs are tokenized.
    let turns = 0;
    let running = true;
    const tick = (): void => {
      if (!running) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const ids = await tokenizeInputsYielding(inputs, long, true);
    running = false;
    expect(ids).toEqual(tokenizeInputs(inputs, long, true));
    // 80K characters: the loop got a turn after every ~16K of them.
    expect(turns).toBeGreaterThanOrEqual(4);
  });

  it('refuses an input over 16 characters per context token before tokenizing it', () => {
    const untouched = {
      ...encoder,
      tokenizer: {
        encode: () => {
          throw new Error('tokenized');
        },
      } as unknown as TextTokenizer,
    };
    expect(refusal(() => tokenizeInputs(['x'.repeat(97)], untouched, true)).body.error).toMatchObject({
      param: 'input',
      code: 'context_length_exceeded',
      message: expect.stringContaining('input[0] has 97 characters, more than the 96'),
    });
  });

  it('groups by length so padding is rare, batches bounded', () => {
    expect(groupByLength([5, 1, 5, 2, 1], 2)).toEqual([[1, 4], [3, 0], [2]]);
  });
});

describe('openaiFailure', () => {
  it('takes status, type and code from the catalog', () => {
    expect(openaiFailure(new ConveyorError('CONTEXT_LENGTH_EXCEEDED', 'too long', 'messages'))).toEqual({
      status: 400,
      headers: {},
      body: { error: { message: 'too long', type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } },
    });
    expect(openaiFailure(new ConveyorError('UNAUTHENTICATED', 'no')).body.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key', param: null });
    expect(openaiFailure(new Error('boom'))).toMatchObject({ status: 500, body: { error: { type: 'server_error', code: null } } });
  });

  it('keeps headers and an OpenAI-only code', () => {
    const failure = openaiFailure(new OpenAIRequestError('UNAVAILABLE', 'busy', undefined, 'service_unavailable', { 'retry-after': '1' }));
    expect(failure).toMatchObject({ status: 503, headers: { 'retry-after': '1' }, body: { error: { code: 'service_unavailable', type: 'server_error' } } });
  });
});

describe('embedding dimensions', () => {
  it('keeps the leading components at unit L2 norm; the full size is unchanged', () => {
    const row = Float32Array.from([3, 4, 12, 5]);
    expect(Array.from(shortenEmbedding(row, 2))).toEqual([Math.fround(0.6), Math.fround(0.8)]);
    expect(shortenEmbedding(row, 4)).toBe(row);
    expect(Array.from(shortenEmbedding(Float32Array.from([0, 0, 1]), 2))).toEqual([0, 0]);
    expect(() => shortenEmbedding(row, 5)).toThrow(/dimensions/);
  });

  it('reads dimensions: null for absent or native, a 400 naming it when too large or below 1', () => {
    expect(requestedDimensions(undefined, 32)).toBeNull();
    expect(requestedDimensions(32, 32)).toBeNull();
    expect(requestedDimensions(8, 32)).toBe(8);
    expect(requestedDimensions(8, -1)).toBe(8);
    for (const bad of [33, 0, -2, 1.5, '8']) expect(() => requestedDimensions(bad, 32)).toThrow(expect.objectContaining({ param: 'dimensions' }));
  });
});
