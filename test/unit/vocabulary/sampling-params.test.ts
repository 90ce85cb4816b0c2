import { describe, expect, it } from 'vitest';
import { ConveyorError } from '../../../src/errors.js';
import { validateSamplingParams } from '../../../src/vocabulary/sampling-params.js';
import type { UncheckedParams, WireNames } from '../../../src/vocabulary/index.js';

const LIMITS = { vocabSize: 151_669 };

function rejection(raw: UncheckedParams, names: WireNames = {}): ConveyorError {
  try {
    validateSamplingParams(raw, LIMITS, {}, names);
  } catch (error) {
    expect(error).toBeInstanceOf(ConveyorError);
    return error as ConveyorError;
  }
  throw new Error(`accepted ${JSON.stringify(raw)}`);
}

describe('validateSamplingParams', () => {
  it('fills OpenAI / vLLM defaults', () => {
    const v = validateSamplingParams({}, LIMITS);
    expect(v.sampling).toEqual({
      temperature: 1,
      topK: 0,
      topP: 1,
      minP: 0,
      repetitionPenalty: 1,
      frequencyPenalty: 0,
      presencePenalty: 0,
      logitBias: null,
      logprobs: false,
      topLogprobs: 0,
      seed: null,
    });
    expect(v.maxTokens).toBeNull();
    expect(v.minTokens).toBe(0);
    expect(v.ignoreEos).toBe(false);
    expect(v.stopTokenIds).toEqual([]);
    expect(v.output).toEqual({ stop: [], includeStopStrInOutput: false, skipSpecialTokens: true });
  });

  it('takes generation_config defaults for omitted fields only', () => {
    const defaults = { temperature: 0.6, topP: 0.95, topK: 20, minP: 0, repetitionPenalty: 1.05 };
    const v = validateSamplingParams({ temperature: 0 }, LIMITS, defaults);
    expect(v.sampling).toMatchObject({ temperature: 0, topP: 0.95, topK: 20, repetitionPenalty: 1.05 });
  });

  it('maps the request fields', () => {
    const v = validateSamplingParams(
      {
        temperature: 0.7,
        top_p: 0.9,
        top_k: 40,
        min_p: 0.05,
        repetition_penalty: 1.1,
        frequency_penalty: -0.5,
        presence_penalty: 2,
        logit_bias: { '151643': -100, '42': 5.5 },
        logprobs: true,
        top_logprobs: 20,
        max_tokens: 64,
        min_tokens: 3,
        seed: -7,
        stop: ['\n\n', 'END', 'END'],
        stop_token_ids: [151643],
        ignore_eos: true,
        include_stop_str_in_output: true,
        skip_special_tokens: false,
      },
      LIMITS,
      {},
      { max_tokens: 'max_completion_tokens' },
    );
    expect(v.sampling).toEqual({
      temperature: 0.7,
      topK: 40,
      topP: 0.9,
      minP: 0.05,
      repetitionPenalty: 1.1,
      frequencyPenalty: -0.5,
      presencePenalty: 2,
      logitBias: { 151643: -100, 42: 5.5 },
      logprobs: true,
      topLogprobs: 20,
      seed: -7,
    });
    expect(v.maxTokens).toBe(64);
    expect(v.maxTokensParam).toBe('max_completion_tokens');
    expect(v.minTokens).toBe(3);
    expect(v.stopTokenIds).toEqual([151643]);
    expect(v.output).toEqual({ stop: ['\n\n', 'END'], includeStopStrInOutput: true, skipSpecialTokens: false });
  });

  it('treats top_k -1 and 0 as disabled, and a completions-style integer logprobs as the alternatives count', () => {
    expect(validateSamplingParams({ top_k: -1 }, LIMITS).sampling.topK).toBe(0);
    expect(validateSamplingParams({ top_k: 0 }, LIMITS).sampling.topK).toBe(0);
    expect(validateSamplingParams({ logprobs: 0 }, LIMITS).sampling).toMatchObject({ logprobs: true, topLogprobs: 0 });
    expect(validateSamplingParams({ logprobs: 5 }, LIMITS).sampling).toMatchObject({ logprobs: true, topLogprobs: 5 });
    expect(validateSamplingParams({ stop: 'x' }, LIMITS).output.stop).toEqual(['x']);
  });

  const cases: [string, UncheckedParams, string, RegExp, WireNames?][] = [
    ['negative temperature', { temperature: -0.1 }, 'temperature', /temperature must be non-negative, got -0.1/],
    ['non-numeric temperature', { temperature: 'hot' }, 'temperature', /temperature must be a finite number, got "hot"/],
    ['NaN temperature', { temperature: NaN }, 'temperature', /finite number/],
    ['top_p of 0', { top_p: 0 }, 'top_p', /top_p must be in \(0, 1\], got 0/],
    ['top_p above 1', { top_p: 1.01 }, 'top_p', /top_p must be in \(0, 1\], got 1.01/],
    ['top_k below -1', { top_k: -2 }, 'top_k', /top_k must be -1 or 0 \(disabled\) or a positive integer, got -2/],
    ['fractional top_k', { top_k: 2.5 }, 'top_k', /top_k must be an integer, got 2.5/],
    ['min_p above 1', { min_p: 1.5 }, 'min_p', /min_p must be in \[0, 1\], got 1.5/],
    ['negative min_p', { min_p: -0.1 }, 'min_p', /min_p must be in \[0, 1\]/],
    ['zero repetition_penalty', { repetition_penalty: 0 }, 'repetition_penalty', /repetition_penalty must be greater than 0, got 0/],
    ['frequency_penalty above 2', { frequency_penalty: 2.5 }, 'frequency_penalty', /frequency_penalty must be in \[-2, 2\], got 2.5/],
    ['presence_penalty below -2', { presence_penalty: -3 }, 'presence_penalty', /presence_penalty must be in \[-2, 2\], got -3/],
    ['logit_bias as an array', { logit_bias: [1] }, 'logit_bias', /logit_bias must be an object/],
    ['logit_bias with a non-id key', { logit_bias: { abc: 1 } }, 'logit_bias', /logit_bias key "abc" is not a token id/],
    ['logit_bias with a negative key', { logit_bias: { '-1': 1 } }, 'logit_bias', /logit_bias key "-1" is not a token id/],
    ['logit_bias with an unknown token id', { logit_bias: { '151669': 1 } }, 'logit_bias', /logit_bias token id 151669 is not in the vocabulary \(0\.\.151668\)/],
    ['logit_bias value out of range', { logit_bias: { '5': 101 } }, 'logit_bias', /logit_bias value for token 5 must be a number in \[-100, 100\], got 101/],
    ['huge logit_bias map', { logit_bias: Object.fromEntries(Array.from({ length: 301 }, (_, i) => [String(i), 1])) }, 'logit_bias', /logit_bias has 301 entries; at most 300 are allowed/],
    ['logprobs above 20', { logprobs: 21 }, 'logprobs', /logprobs must be in \[0, 20\], got 21/],
    ['top_logprobs above 20', { logprobs: true, top_logprobs: 21 }, 'top_logprobs', /top_logprobs must be in \[0, 20\], got 21/],
    ['top_logprobs without logprobs', { top_logprobs: 3 }, 'top_logprobs', /top_logprobs requires logprobs to be true/],
    ['logprobs as a string', { logprobs: 'yes' }, 'logprobs', /logprobs must be a boolean, got "yes"/],
    ['max_tokens of 0', { max_tokens: 0 }, 'max_tokens', /max_tokens must be at least 1, got 0/],
    ['fractional max_tokens', { max_tokens: 1.5 }, 'max_tokens', /max_tokens must be an integer, got 1.5/],
    ['max_completion_tokens of -1', { max_tokens: -1 }, 'max_completion_tokens', /max_completion_tokens must be at least 1, got -1/, { max_tokens: 'max_completion_tokens' }],
    ['min_tokens above max_tokens', { max_tokens: 2, min_tokens: 3 }, 'min_tokens', /min_tokens \(3\) must not exceed max_tokens \(2\)/],
    ['negative min_tokens', { min_tokens: -1 }, 'min_tokens', /min_tokens must be non-negative, got -1/],
    ['fractional seed', { seed: 1.5 }, 'seed', /seed must be an integer within ±\(2\^53 − 1\), got 1.5/],
    ['seed as a string', { seed: '42' }, 'seed', /seed must be an integer.*got "42"/],
    ['empty stop string', { stop: ['a', ''] }, 'stop', /stop strings must not be empty/],
    ['stop of the wrong type', { stop: [1] }, 'stop', /stop must be a string or an array of strings/],
    ['too many stop strings', { stop: Array.from({ length: 33 }, (_, i) => `s${i}`) }, 'stop', /stop has 33 strings; at most 32 are allowed/],
    ['unknown stop token id', { stop_token_ids: [999_999] }, 'stop_token_ids', /stop_token_ids: token id 999999 is not in the vocabulary/],
    ['non-integer stop token id', { stop_token_ids: [1.5] }, 'stop_token_ids', /stop_token_ids must contain non-negative integer token ids, got 1.5/],
    ['non-boolean ignore_eos', { ignore_eos: 1 }, 'ignore_eos', /ignore_eos must be a boolean, got 1/],
  ];

  for (const [name, raw, param, message, names] of cases) {
    it(`rejects ${name} naming ${param}`, () => {
      const error = rejection(raw, names);
      expect(error.code).toBe('INVALID_ARG');
      expect(error.param).toBe(param);
      expect(error.message).toMatch(message);
      expect(error.httpStatus).toBe(400);
    });
  }
});
