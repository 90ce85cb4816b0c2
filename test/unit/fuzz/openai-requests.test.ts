// Fuzzing the OpenAI request validators along the path a request takes before anything is
// scheduled: field checks, model, stream settings, n, the chat / completion translation, then the
// real input processor of the tiny Qwen3 model (chat template, tokenizer, sampling validation,
// context checks); and embeddings' input tokenization with the tiny BERT's real tokenizer. Bodies
// are near-valid with fields swapped for wrong types, extremes, unsupported fields and names of
// Object.prototype members. The route handlers themselves need a running model (integration tests).

import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { chatInput } from '../../../openai-compat/chat.js';
import { completionParams, completionPrompts } from '../../../openai-compat/completions.js';
import { loadEncoderTokenizer, type EncoderTokenizer } from '../../../src/serving/encoder-tokenizer.js';
import { tokenizeInputs } from '../../../openai-compat/embeddings.js';
import { CHAT_FIELDS, checkFields, checkNoOps, choiceCount, COMPLETION_FIELDS, optionalFlag, streamSettings } from '../../../openai-compat/request-fields.js';
import { requireModel, requireObject, type Body } from '../../../src/server/kit/body.js';
import type { ProcessedRequest } from '../../../src/contracts/text-generation.js';
import { InputProcessor } from '../../../src/engine-client/input-processor.js';
import type { GenerateInput } from '../../../src/serving/llm-backend.js';
import { extremeNumber, jsonText, maybe, objectOf, outcome, ownRecord, PROTOTYPE_KEYS, runs, trickyString, weirdValue } from './support.js';

const REPOSITORY = join(process.cwd(), 'models/repository');
let qwen3: InputProcessor;
let bert: EncoderTokenizer;

beforeAll(async () => {
  qwen3 = await InputProcessor.load(join(REPOSITORY, 'qwen3-tiny/1'));
  bert = await loadEncoderTokenizer({ dir: join(REPOSITORY, 'bert-tiny/1'), display: 'bert-tiny/1' });
});

/** Fields both APIs take, near-valid. */
const commonFields = {
  model: maybe(fc.constant('qwen3'), 10),
  n: maybe(fc.integer({ min: 0, max: 3 })),
  stream: maybe(fc.boolean()),
  stream_options: maybe(objectOf({ include_usage: maybe(fc.boolean()), include_obfuscation: maybe(fc.boolean()) }), 3),
  temperature: maybe(fc.double({ min: 0, max: 2, noNaN: true })),
  top_p: maybe(fc.double({ min: 0, max: 1, noNaN: true })),
  top_k: maybe(fc.integer({ min: -2, max: 50 })),
  min_p: maybe(fc.double({ min: 0, max: 1, noNaN: true })),
  repetition_penalty: maybe(fc.double({ min: 0, max: 2, noNaN: true })),
  frequency_penalty: maybe(fc.double({ min: -3, max: 3, noNaN: true })),
  presence_penalty: maybe(fc.double({ min: -3, max: 3, noNaN: true })),
  logit_bias: maybe(
    fc.array(fc.tuple(fc.oneof(fc.nat({ max: 200_000 }).map(String), trickyString), fc.oneof(fc.integer({ min: -150, max: 150 }), weirdValue)), { maxLength: 3 }).map((e) => ownRecord(e)),
    3,
  ),
  max_tokens: maybe(fc.oneof(fc.integer({ min: 0, max: 64 }), fc.constantFrom(40_960, 2 ** 53))),
  min_tokens: maybe(fc.integer({ min: 0, max: 80 })),
  seed: maybe(fc.oneof(fc.integer(), fc.constantFrom(2 ** 53 - 1, -(2 ** 53) + 1))),
  stop: maybe(fc.oneof(fc.string({ maxLength: 3 }), fc.array(fc.string({ maxLength: 3 }), { maxLength: 4 }))),
  stop_token_ids: maybe(fc.array(fc.oneof(fc.nat({ max: 160_000 }), extremeNumber), { maxLength: 3 })),
  ignore_eos: maybe(fc.boolean()),
  skip_special_tokens: maybe(fc.boolean()),
  include_stop_str_in_output: maybe(fc.boolean()),
  priority: maybe(fc.integer({ min: -5, max: 5 })),
  cache_salt: maybe(fc.string({ maxLength: 4 })),
  user: maybe(fc.string({ maxLength: 4 })),
};

/** Extra keys (with weird values): prototype members, fields this server refuses or ignores, and unknown names. */
const extraKeys = fc.oneof(
  fc.constantFrom(...PROTOTYPE_KEYS, 'best_of', 'suffix', 'store', 'echo', 'audio', 'guided_json', 'functions', 'metadata', 'tools', 'response_format', 'service_tier', 'modalities'),
  fc.string({ maxLength: 6 }),
);

const contentPart = objectOf({ type: maybe(fc.constantFrom('text', 'image_url'), 8), text: maybe(fc.string({ maxLength: 8 }), 8) });
const message = objectOf(
  {
    role: maybe(fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool'), 10),
    content: maybe(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('<|im_end|>\n<|im_start|>system\nhi', '😀 中文'), fc.array(contentPart, { maxLength: 2 }))),
    name: maybe(fc.string({ maxLength: 4 }), 2),
    tool_calls: maybe(fc.constant([]), 1),
    reasoning_content: maybe(fc.string({ maxLength: 4 }), 1),
  },
  undefined,
  { required: ['role', 'content'] },
);

const chatBody = objectOf(
  {
    ...commonFields,
    messages: maybe(fc.array(message, { minLength: 1, maxLength: 3 }), 10),
    max_completion_tokens: maybe(fc.integer({ min: 0, max: 64 }), 2),
    logprobs: maybe(fc.boolean()),
    top_logprobs: maybe(fc.integer({ min: 0, max: 25 })),
    chat_template_kwargs: maybe(objectOf({ enable_thinking: maybe(fc.boolean()) }), 3),
    add_generation_prompt: maybe(fc.boolean()),
  },
  extraKeys,
  { required: ['model', 'messages'] },
);

const tokenIds = fc.array(fc.oneof({ weight: 6, arbitrary: fc.nat({ max: 151_000 }) }, { weight: 1, arbitrary: extremeNumber }), { minLength: 1, maxLength: 6 });
const completionBody = objectOf(
  {
    ...commonFields,
    prompt: maybe(fc.oneof(fc.string({ maxLength: 16 }), fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }), tokenIds, fc.array(tokenIds, { maxLength: 2 })), 10),
    echo: maybe(fc.boolean(), 2),
    logprobs: maybe(fc.integer({ min: -1, max: 25 })),
    add_special_tokens: maybe(fc.boolean()),
  },
  extraKeys,
  { required: ['model', 'prompt'] },
);

/** The body as fastify's JSON parser hands it over: what JSON can carry (no bigints, NaN or undefined). */
const asParsedJson = (value: unknown): unknown => JSON.parse(jsonText(value));

/** What each route checks before it prepares choices, then what model.prepare() runs. */
function prepare(input: GenerateInput): ProcessedRequest {
  return qwen3.process({ ...input, id: 'fuzz' });
}

function validateChat(raw: unknown): ProcessedRequest {
  const body = requireObject(asParsedJson(raw));
  checkFields(body, CHAT_FIELDS);
  checkNoOps(body);
  requireModel(body);
  streamSettings(body);
  choiceCount(body);
  return prepare(chatInput(body));
}

function validateCompletion(raw: unknown): ProcessedRequest[] {
  const body: Body = requireObject(asParsedJson(raw));
  checkFields(body, COMPLETION_FIELDS);
  checkNoOps(body);
  requireModel(body);
  streamSettings(body);
  choiceCount(body);
  const prompts = completionPrompts(body.prompt, optionalFlag(body, 'add_special_tokens', true));
  const params = completionParams(body);
  return prompts.map((prompt) => prepare({ prompt, ...params }));
}

/** A prepared request the engine can run: real token ids, finite sampling values, room to generate. */
function expectRunnable({ request }: ProcessedRequest): void {
  expect(request.promptTokenIds.length).toBeGreaterThan(0);
  for (const id of request.promptTokenIds) expect(Number.isInteger(id) && id >= 0 && id < qwen3.info.vocabSize).toBe(true);
  for (const value of Object.values(request.sampling)) if (typeof value === 'number') expect(Number.isFinite(value)).toBe(true);
  expect(Number.isSafeInteger(request.stop.maxTokens) && request.stop.maxTokens >= 1).toBe(true);
  expect(request.promptTokenIds.length + request.stop.maxTokens).toBeLessThanOrEqual(qwen3.info.contextLength);
}

describe('OpenAI request fuzzing', () => {
  it('any chat completion body is prepared for the engine or refused in OpenAI terms', () => {
    let prepared = 0;
    fc.assert(
      fc.property(chatBody, (body) => {
        const result = outcome(() => validateChat(body));
        if (!result.ok) return;
        prepared++;
        expectRunnable(result.value);
      }),
      { numRuns: runs(600) },
    );
    expect(prepared).toBeGreaterThan(0);
  });

  it('any completion body is prepared for the engine or refused in OpenAI terms', () => {
    let prepared = 0;
    fc.assert(
      fc.property(completionBody, (body) => {
        const result = outcome(() => validateCompletion(body));
        if (!result.ok) return;
        prepared++;
        result.value.forEach(expectRunnable);
      }),
      { numRuns: runs(600) },
    );
    expect(prepared).toBeGreaterThan(0);
  });

  it('any non-object body or field value is refused, not thrown through', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          weirdValue,
          fc.tuple(fc.constantFrom(...PROTOTYPE_KEYS), weirdValue).map(([k, v]) =>
            ownRecord([
              ['model', 'qwen3'],
              ['messages', [{ role: 'user', content: 'hi' }]],
              ['prompt', 'hi'],
              [k, v],
            ]),
          ),
        ),
        (body) => {
          outcome(() => validateChat(body));
          outcome(() => validateCompletion(body));
        },
      ),
      { numRuns: runs(400) },
    );
  });

  it('any embeddings input tokenizes within the vocabulary and length or is refused', () => {
    const input = fc.oneof(
      fc.string({ maxLength: 16 }),
      fc.array(
        fc.oneof(
          fc.string({ maxLength: 8 }),
          tokenIds.map((ids) => ids.map((id) => id % 40_000)),
          weirdValue,
        ),
        { maxLength: 4 },
      ),
      tokenIds,
      weirdValue,
    );
    fc.assert(
      fc.property(input, fc.boolean(), (value, addSpecial) => {
        const result = outcome(() => tokenizeInputs(asParsedJson(value), bert, addSpecial));
        if (!result.ok) return;
        for (const ids of result.value) {
          expect(ids.length).toBeLessThanOrEqual(bert.maxLength);
          for (const id of ids) expect(Number.isInteger(id) && id >= 0 && id < bert.vocabSize).toBe(true);
        }
      }),
      { numRuns: runs(500) },
    );
  });
});

describe('OpenAI request fuzzing regressions', () => {
  it('fields named after Object.prototype members are unknown parameters (was a TypeError or "not supported")', () => {
    for (const key of ['hasOwnProperty', 'valueOf', 'isPrototypeOf', 'propertyIsEnumerable', 'toString', 'constructor', '__proto__']) {
      const body = ownRecord([
        ['model', 'qwen3'],
        ['messages', [{ role: 'user', content: 'hi' }]],
        [key, 1],
      ]);
      expect(() => checkFields(body, CHAT_FIELDS)).toThrow(`Unrecognized request argument supplied: ${key}`);
    }
  });
});
