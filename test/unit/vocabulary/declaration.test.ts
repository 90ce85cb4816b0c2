// The one declaration of generation parameters: every field's boundaries, the rules between
// fields, the accepted values round-tripping to the engine's SamplingParams, and each
// protocol's errors naming the field as that protocol does.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chatInput } from '../../../openai-compat/chat.js';
import { completionParams } from '../../../openai-compat/completions.js';
import { CHAT_FIELDS, COMPLETION_FIELDS } from '../../../openai-compat/request-fields.js';
import { validateSamplingParams } from '../../../src/vocabulary/sampling-params.js';
import { ConveyorError } from '../../../src/errors.js';
import { GENERATION_FIELDS, generationParamsSchema, parseGenerationParams, valueKind, type UncheckedParams, type WireNames } from '../../../src/vocabulary/index.js';
import { buildTritonLlmRequest } from '../../../src/triton-llm/request.js';
import { generateCallFromWire, type WireSamplingParameters } from '../../../src/server/grpc-generation/generation-codec.js';
import { parseClientMessage } from '../../../src/server/websocket/messages.js';

const LIMITS = { vocabSize: 1000, maxLogprobs: 5 };

function rejection(fn: () => unknown): ConveyorError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConveyorError);
    return error as ConveyorError;
  }
  throw new Error('expected a rejection');
}

const reject = (raw: UncheckedParams, names?: WireNames) => rejection(() => parseGenerationParams(raw, LIMITS, names));

describe('the declaration: each field at its boundaries', () => {
  // [field, accepted values, rejected values, other fields sent with it]: the last accepted / first rejected value on each side.
  const bounds: [keyof UncheckedParams, unknown[], unknown[], UncheckedParams?][] = [
    ['priority', [0, -3, Number.MAX_SAFE_INTEGER], [1.5, '1', 2 ** 53]],
    ['cache_salt', ['a'], ['', 1]],
    ['top_logprobs', [0, 5], [-1, 6, 1.5], { logprobs: true }],
    ['prompt_logprobs', [0, 5], [-1, 6, 1.5, true]],
    ['temperature', [0, 1e9], [-Number.MIN_VALUE, Infinity, NaN, '1']],
    ['top_p', [Number.MIN_VALUE, 1], [0, 1 + 2 ** -52]],
    ['top_k', [-1, 0, 1, 1e6], [-2, 2.5]],
    ['min_p', [0, 1], [-Number.MIN_VALUE, 1 + 2 ** -52]],
    ['repetition_penalty', [Number.MIN_VALUE, 10], [0, -1]],
    ['frequency_penalty', [-2, 2], [-2.0001, 2.0001]],
    ['presence_penalty', [-2, 2], [-2.0001, 2.0001]],
    ['logit_bias', [{}, { '0': -100, '999': 100 }], [{ '1000': 0 }, { '0': 100.5 }, { '-1': 0 }, { '01x': 0 }, [1], 'x']],
    ['seed', [-(2 ** 53 - 1), 2 ** 53 - 1], [2 ** 53, 0.5, '1']],
    ['max_tokens', [1, 2 ** 53 - 1], [0, 1.5, 2 ** 53]],
    ['min_tokens', [0, 7], [-1, 0.5]],
    ['ignore_eos', [true, false], [1, 'true']],
    ['stop_token_ids', [[], [0, 999]], [[1000], [-1], [1.5], 5]],
    ['stop', ['x', [], Array.from({ length: 32 }, (_, i) => `s${i}`)], ['', [''], Array.from({ length: 33 }, (_, i) => `s${i}`), [1]]],
    ['include_stop_str_in_output', [true], [0]],
    ['skip_special_tokens', [false], ['no']],
    // Structured outputs: the shapes at their edges (structured-outputs.test.ts checks each translation and message).
    ['response_format', [{ type: 'text' }, { type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string' } } }], ['json', [], 1]],
    ['structured_outputs', [{}, { json_object: true }, { choice: ['a'] }], [[], 'json', 1]],
    ['guided_json', [{ type: 'object' }, '{"type":"object"}', true], [{ $ref: '#' }, 'not json', 1]],
    ['guided_regex', ['a+', '\\d{2}'], ['', '(', 1]],
    ['guided_choice', [['a'], ['a', 'b']], [[], 'a', 3]],
    ['guided_grammar', ['root ::= "a"'], ['', 1]],
    ['reasoning_effort', ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'], ['huge', '', 1, true]],
    ['max_thinking_tokens', [0, 1, 4096], [-1, 1.5, '8']],
  ];

  it('covers every declared field but logprobs (checked with top_logprobs below)', () => {
    expect(new Set([...bounds.map(([field]) => field), 'logprobs'])).toEqual(new Set(GENERATION_FIELDS));
  });

  for (const [field, accepted, rejected, others = {}] of bounds) {
    it(`${field}: accepts ${accepted.length}, refuses ${rejected.length} naming ${field}`, () => {
      for (const value of accepted) expect(() => parseGenerationParams({ ...others, [field]: value }, LIMITS)).not.toThrow();
      for (const value of rejected) {
        const error = reject({ ...others, [field]: value });
        expect(error).toMatchObject({ code: 'INVALID_ARG', param: field });
        expect(error.message.startsWith(field)).toBe(true);
        expect(error.message).not.toMatch(/\{\w*\}/);
      }
    });
  }

  it('null and absent are the same: the default applies', () => {
    const all = Object.fromEntries(GENERATION_FIELDS.map((f) => [f, null]));
    expect(parseGenerationParams(all, LIMITS)).toEqual(parseGenerationParams({}, LIMITS));
  });

  it('logprobs: a boolean, or the completions count within max_logprobs', () => {
    expect(parseGenerationParams({ logprobs: true, top_logprobs: 5 }, LIMITS)).toMatchObject({ logprobs: true, top_logprobs: 5 });
    expect(parseGenerationParams({ logprobs: 0 }, LIMITS).logprobs).toBe(0);
    expect(reject({ logprobs: 6 }).message).toBe('logprobs must be in [0, 5], got 6');
    expect(reject({ logprobs: 'yes' }).message).toBe('logprobs must be a boolean, got "yes"');
  });

  it('checks the rules between fields, naming the field at fault and the other by its wire name', () => {
    expect(reject({ top_logprobs: 2 })).toMatchObject({ param: 'top_logprobs', message: 'top_logprobs requires logprobs to be true' });
    expect(reject({ logprobs: 2, top_logprobs: 1 })).toMatchObject({ param: 'top_logprobs', message: 'top_logprobs cannot be combined with an integer logprobs' });
    expect(reject({ max_tokens: 2, min_tokens: 3 }, { max_tokens: 'max_completion_tokens' })).toMatchObject({
      param: 'min_tokens',
      message: 'min_tokens (3) must not exceed max_completion_tokens (2)',
    });
    expect(() => parseGenerationParams({ top_logprobs: 0 }, LIMITS)).not.toThrow();
    expect(() => parseGenerationParams({ max_tokens: 3, min_tokens: 3 }, LIMITS)).not.toThrow();
  });

  it('gives every field a value kind for protocols that carry text', () => {
    for (const field of GENERATION_FIELDS.filter((f) => f !== 'logprobs')) expect(['number', 'int', 'bool', 'string', 'strings', 'ints', 'object']).toContain(valueKind(field));
  });
});

/** Valid values for every field, drawn within the declared ranges (limits: vocabulary 1000, 5 alternatives). */
const validParams = fc
  .record(
    {
      priority: fc.integer(),
      cache_salt: fc.string({ minLength: 1, maxLength: 4 }),
      temperature: fc.double({ min: 0, max: 4, noNaN: true }),
      top_p: fc.double({ min: Number.MIN_VALUE, max: 1, noNaN: true }),
      top_k: fc.integer({ min: -1, max: 100 }),
      min_p: fc.double({ min: 0, max: 1, noNaN: true }),
      repetition_penalty: fc.double({ min: Number.MIN_VALUE, max: 3, noNaN: true }),
      frequency_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
      presence_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
      logit_bias: fc.dictionary(fc.nat({ max: 999 }).map(String), fc.double({ min: -100, max: 100, noNaN: true }), { maxKeys: 4 }),
      seed: fc.maxSafeInteger(),
      max_tokens: fc.integer({ min: 10, max: 1000 }),
      min_tokens: fc.integer({ min: 0, max: 10 }),
      ignore_eos: fc.boolean(),
      stop_token_ids: fc.array(fc.nat({ max: 999 }), { maxLength: 3 }),
      stop: fc.oneof(fc.string({ minLength: 1, maxLength: 3 }), fc.array(fc.string({ minLength: 1, maxLength: 3 }), { maxLength: 4 })),
      include_stop_str_in_output: fc.boolean(),
      skip_special_tokens: fc.boolean(),
      logprobs: fc.oneof(fc.boolean(), fc.nat({ max: 5 })),
    },
    { requiredKeys: [] },
  )
  .chain((p): fc.Arbitrary<typeof p & { top_logprobs?: number }> => (p.logprobs === true ? fc.nat({ max: 5 }).map((top) => ({ ...p, top_logprobs: top })) : fc.constant(p)));

describe('the declaration: accepted values round-trip', () => {
  it('any accepted value passes validation into the SamplingParams the fields spell', () => {
    fc.assert(
      fc.property(validParams, (raw) => {
        expect(generationParamsSchema(LIMITS).safeParse(raw).success).toBe(true);
        const v = validateSamplingParams(raw, LIMITS);
        const bias = raw.logit_bias && Object.keys(raw.logit_bias).length > 0 ? Object.fromEntries(Object.entries(raw.logit_bias).map(([k, b]) => [Number(k), b])) : null;
        const countForm = typeof raw.logprobs === 'number';
        expect(v.sampling).toEqual({
          temperature: raw.temperature ?? 1,
          topP: raw.top_p ?? 1,
          topK: Math.max(0, raw.top_k ?? 0),
          minP: raw.min_p ?? 0,
          repetitionPenalty: raw.repetition_penalty ?? 1,
          frequencyPenalty: raw.frequency_penalty ?? 0,
          presencePenalty: raw.presence_penalty ?? 0,
          logitBias: bias,
          logprobs: countForm || raw.logprobs === true,
          topLogprobs: countForm ? raw.logprobs : raw.logprobs === true ? (raw.top_logprobs ?? 0) : 0,
          seed: raw.seed ?? null,
        });
        expect(v).toMatchObject({
          maxTokens: raw.max_tokens ?? null,
          minTokens: raw.min_tokens ?? 0,
          ignoreEos: raw.ignore_eos ?? false,
          stopTokenIds: raw.stop_token_ids ?? [],
          priority: raw.priority ?? 0,
          cacheSalt: raw.cache_salt ?? null,
          output: {
            stop: raw.stop === undefined ? [] : [...new Set(typeof raw.stop === 'string' ? [raw.stop] : raw.stop)],
            includeStopStrInOutput: raw.include_stop_str_in_output ?? false,
            skipSpecialTokens: raw.skip_special_tokens ?? true,
          },
        });
      }),
      { numRuns: 300 },
    );
  });

  it('anything refused names a declared field in an INVALID_ARG error, with no template left in the message', () => {
    const anyValue = fc.oneof(fc.anything(), fc.double(), fc.integer(), fc.string());
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...GENERATION_FIELDS), anyValue, { maxKeys: 4 }), (raw) => {
        const result = generationParamsSchema(LIMITS).safeParse(raw);
        if (result.success) return;
        const error = reject(raw);
        expect(error.code).toBe('INVALID_ARG');
        // A structured field's part is named below it: response_format.json_schema.schema.
        expect(GENERATION_FIELDS).toContain(error.param?.split(/[.[]/)[0]);
        // The refused part's path may hold the request's own keys (fast-check once sent one named
        // "{}": "structured_outputs.{} is not supported"); a template is what is left outside it.
        expect(error.message.replaceAll(error.param ?? '', '')).not.toMatch(/\{\w*\}/);
      }),
      { numRuns: 300, examples: [[{ structured_outputs: { '{}': '' } }]] },
    );
  });
});

/** A protocol's request carried to the validator the way its front end does. */
const validate = ({ sampling, wireNames }: { sampling?: UncheckedParams; wireNames?: WireNames }) => validateSamplingParams(sampling ?? {}, LIMITS, {}, wireNames);

describe('each protocol maps its wire names onto the declaration', () => {
  const chat = (extra: Record<string, unknown>) => chatInput({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });
  const wsMessage = (extra: Record<string, unknown>) => {
    const message = parseClientMessage(JSON.stringify({ type: 'generate', id: 'g', model: 'm', prompt: 'hi', ...extra }));
    if (message.type !== 'generate') throw new Error('expected a generate message');
    return message.input;
  };
  const triton = (parameters: Record<string, unknown>) => buildTritonLlmRequest({ model: 'm' }, { text_input: 'hi' }, parameters);
  const grpc = (sampling: Partial<WireSamplingParameters>) =>
    generateCallFromWire({ model: 'm', model_version: '', request_id: '', prompt: 'text', text: 'hi', sampling: { stop: [], stop_token_ids: [], logit_bias: {}, ...sampling } }).input;

  it('OpenAI chat: max_completion_tokens carries max_tokens, wins over it, and errors name it', () => {
    expect(validate(chat({ max_tokens: 3, max_completion_tokens: 9 })).maxTokens).toBe(9);
    expect(validate(chat({ max_tokens: 3, max_completion_tokens: null })).maxTokens).toBe(3);
    expect(rejection(() => validate(chat({ max_completion_tokens: 0 })))).toMatchObject({ param: 'max_completion_tokens', message: 'max_completion_tokens must be at least 1, got 0' });
    expect(rejection(() => validate(chat({ max_completion_tokens: 2, min_tokens: 5 }))).message).toBe('min_tokens (5) must not exceed max_completion_tokens (2)');
    expect(rejection(() => validate(chat({ top_p: 0 }))).param).toBe('top_p');
  });

  it('OpenAI completions: integer logprobs, the default max_tokens, errors by field', () => {
    expect(validate(completionParams({ logprobs: 3 })).sampling).toMatchObject({ logprobs: true, topLogprobs: 3 });
    expect(validate(completionParams({})).maxTokens).toBe(16);
    expect(rejection(() => validate(completionParams({ logprobs: 9 })))).toMatchObject({ param: 'logprobs', message: 'logprobs must be in [0, 5], got 9' });
  });

  it('WebSocket: OpenAI names, priority carried to the engine, errors by field', () => {
    expect(validate(wsMessage({ max_completion_tokens: 4, priority: -2 }))).toMatchObject({ maxTokens: 4, maxTokensParam: 'max_completion_tokens', priority: -2 });
    expect(rejection(() => validate(wsMessage({ priority: 0.5 })))).toMatchObject({ param: 'priority', message: 'priority must be an integer' });
    expect(rejection(() => validate(wsMessage({ stop_token_ids: [1000] })))).toMatchObject({ param: 'stop_token_ids' });
  });

  it('Triton: text values converted by the declared kind, errors by the parameter name', () => {
    expect(validate(triton({ temperature: '0.5', ignore_eos: 'true', stop_token_ids: '[1]' }))).toMatchObject({ sampling: { temperature: 0.5 }, ignoreEos: true, stopTokenIds: [1] });
    expect(rejection(() => validate(triton({ top_k: '-5' })))).toMatchObject({ param: 'top_k', message: 'top_k must be -1 or 0 (disabled) or a positive integer, got -5' });
  });

  it('gRPC: empty lists and maps are unset, int64 seeds converted, errors by the proto field name', () => {
    expect(grpc({})).toMatchObject({ sampling: {} });
    expect(validate(grpc({ seed: '42', stop: ['x'] }))).toMatchObject({ sampling: { seed: 42 }, output: { stop: ['x'] } });
    expect(rejection(() => validate(grpc({ seed: '9007199254740993' })))).toMatchObject({ param: 'seed' });
    expect(rejection(() => validate(grpc({ repetition_penalty: 0 })))).toMatchObject({ param: 'repetition_penalty' });
  });

  it('OpenAI accepts exactly the fields it did before the declaration, plus structured outputs (checkFields)', () => {
    const sampling = [
      'temperature',
      'top_p',
      'top_k',
      'min_p',
      'repetition_penalty',
      'frequency_penalty',
      'presence_penalty',
      'logit_bias',
      'max_tokens',
      'min_tokens',
      'seed',
      'stop',
      'stop_token_ids',
      'ignore_eos',
      'include_stop_str_in_output',
      'skip_special_tokens',
      'response_format',
      'structured_outputs',
      'guided_json',
      'guided_regex',
      'guided_choice',
      'guided_grammar',
    ];
    // keep_alive: Ollama's, how long an on-demand model stays loaded after the request.
    const common = [
      'model',
      'n',
      'stream',
      'stream_options',
      'priority',
      'cache_salt',
      'logprobs',
      ...sampling,
      'user',
      'metadata',
      'safety_identifier',
      'prompt_cache_key',
      'request_id',
      'keep_alive',
      // vLLM's: logprobs' tokens spelled token_id:N.
      'return_tokens_as_token_ids',
    ];
    expect(CHAT_FIELDS).toEqual(
      new Set([
        ...common,
        'messages',
        'max_completion_tokens',
        'top_logprobs',
        'chat_template_kwargs',
        'add_generation_prompt',
        'tools',
        'tool_choice',
        'parallel_tool_calls',
        'reasoning_effort',
        'max_thinking_tokens',
        'thinking_token_budget',
      ]),
    );
    expect(COMPLETION_FIELDS).toEqual(new Set([...common, 'prompt', 'echo', 'add_special_tokens', 'prompt_logprobs', 'best_of', 'suffix']));
  });
});
