// speculative_config's draft_model method as read at load (the directory itself is checked by
// test/integration/draft-model-serving.test.ts): vLLM's field names, the target's precision when
// quantization is absent, every refusal naming its field; and the vocabulary comparison that keeps
// a draft with another tokenizer out.
import { describe, expect, it } from 'vitest';
import { parseSpeculativeConfig, vocabularyDifference } from '../../../src/serving/speculative-config.js';

const parse = (value: object) => parseSpeculativeConfig(JSON.stringify(value));

describe('speculative_config method draft_model', () => {
  it('reads vLLM draft-model fields', () => {
    expect(parse({ method: 'draft_model', model: '../draft', num_speculative_tokens: 5 })).toEqual({
      method: 'draft_model',
      model: '../draft',
      quantization: undefined,
      numSpeculativeTokens: 5,
      disableByBatchSize: 5,
    });
    expect(parse({ method: 'draft_model', model: '/abs/draft', num_speculative_tokens: 2, quantization: 'fp16', disable_by_batch_size: 4 })).toMatchObject({
      quantization: 'fp16',
      disableByBatchSize: 4,
    });
  });

  it.each([
    [{ method: 'draft_model', num_speculative_tokens: 3 }, "model (the draft model's directory) is required for method draft_model"],
    [{ method: 'draft_model', model: ' ', num_speculative_tokens: 3 }, 'model must be a non-empty string, got " "'],
    [{ method: 'draft_model', model: 7, num_speculative_tokens: 3 }, 'model must be a non-empty string, got 7'],
    [{ method: 'draft_model', model: 'd' }, 'num_speculative_tokens is required'],
    [{ method: 'draft_model', model: 'd', num_speculative_tokens: 0 }, 'num_speculative_tokens must be an integer ≥ 1, got 0'],
    [{ method: 'draft_model', model: 'd', num_speculative_tokens: 3, quantization: '' }, 'quantization must be a non-empty string'],
    [
      { method: 'draft_model', model: 'd', num_speculative_tokens: 3, prompt_lookup_max: 3 },
      "unknown field 'prompt_lookup_max' for method draft_model (served: method, model, num_speculative_tokens, quantization, disable_by_batch_size)",
    ],
    [{ method: 'ngram', model: 'd', num_speculative_tokens: 3 }, "unknown field 'model' for method ngram"],
    [{ method: 'eagle', num_speculative_tokens: 3 }, 'method must be "ngram" (prompt lookup) or "draft_model", got "eagle"'],
  ])('refuses %j naming the field', (value, message) => {
    expect(() => parse(value)).toThrow(`parameter speculative_config: ${message}`);
  });
});

describe('vocabularyDifference', () => {
  const tokenizer = (vocab: Record<string, number>, added: { id: number; content: string }[] = []) => JSON.stringify({ model: { type: 'BPE', vocab }, added_tokens: added });

  it('is null for the same vocabulary however the file is written', () => {
    expect(vocabularyDifference(tokenizer({ a: 0, b: 1 }), tokenizer({ a: 0, b: 1 }))).toBeNull();
    expect(vocabularyDifference(tokenizer({ a: 0, b: 1 }, [{ id: 2, content: '<s>' }]), JSON.stringify({ added_tokens: [{ id: 2, content: '<s>' }], model: { vocab: { b: 1, a: 0 } } }))).toBeNull();
  });

  it('names the first token whose id differs, or the sizes', () => {
    expect(vocabularyDifference(tokenizer({ a: 0, b: 1 }), tokenizer({ a: 1, b: 0 }))).toBe('token "a" is id 0 in the target\'s, id 1 in the draft\'s');
    expect(vocabularyDifference(tokenizer({ a: 0, b: 1 }), tokenizer({ a: 0, c: 1 }))).toBe('token "b" is id 1 in the target\'s, absent in the draft\'s');
    expect(
      vocabularyDifference(
        tokenizer({ a: 0, b: 1 }),
        tokenizer({ a: 0 }, [
          { id: 1, content: 'b' },
          { id: 2, content: '<s>' },
        ]),
      ),
    ).toBe("3 tokens against the target's 2");
  });

  it('reads Unigram vocabularies (a list of pieces, ids by position)', () => {
    const unigram = (pieces: string[]) => JSON.stringify({ model: { type: 'Unigram', vocab: pieces.map((p) => [p, -1]) } });
    expect(vocabularyDifference(unigram(['a', 'b']), unigram(['a', 'b']))).toBeNull();
    expect(vocabularyDifference(unigram(['a', 'b']), unigram(['b', 'a']))).toContain('token "a" is id 0');
  });
});
