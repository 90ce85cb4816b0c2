// Load shedding, usage over n choices and several prompts, and logprob formatting.
import { describe, expect, it } from 'vitest';
import { Admission } from '../../../src/serving/admission.js';
import { openaiFailure } from '../../../openai-compat/errors.js';
import { completionLogprobs, TokenText } from '../../../openai-compat/logprobs.js';
import { echoedPromptLogprobs, vllmPromptLogprobs } from '../../../openai-compat/prompt-logprobs.js';
import { UsageTally } from '../../../openai-compat/wire.js';
import type { TextTokenizer } from '../../../src/contracts/tokenizer.js';

describe('Admission', () => {
  it('sheds past the bound with 503 and retry-after, per model', () => {
    const admission = new Admission({ maxQueuedRequests: 3 });
    admission.enter('a', 2);
    admission.enter('b', 3);
    admission.enter('a', 1);
    const error = (() => {
      try {
        admission.enter('a', 1);
      } catch (e) {
        return openaiFailure(e);
      }
    })();
    expect(error).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
    admission.leave('a');
    expect(() => admission.enter('a', 1)).not.toThrow();
    expect(admission.queuedFor('a')).toBe(3);
  });

  it('lets a request larger than the bound run when nothing waits; 0 never sheds', () => {
    expect(() => new Admission({ maxQueuedRequests: 2 }).enter('a', 5)).not.toThrow();
    const unbounded = new Admission({ maxQueuedRequests: 0 });
    expect(() => unbounded.enter('a', 10_000)).not.toThrow();
  });
});

describe('UsageTally', () => {
  const usage = (promptTokens: number, completionTokens: number, cachedTokens: number) => ({ promptTokens, completionTokens, cachedTokens });

  it('counts each prompt once, with the cache hits of its first choice, and every completion', () => {
    const tally = new UsageTally(2);
    tally.record(1, usage(10, 4, 8));
    tally.record(0, usage(10, 5, 0));
    tally.record(2, usage(7, 3, 0));
    tally.record(3, usage(7, 2, 0));
    expect(tally.toWire()).toEqual({ prompt_tokens: 17, completion_tokens: 14, total_tokens: 31, prompt_tokens_details: { cached_tokens: 0 } });
  });
});

describe('logprobs', () => {
  // A byte-level vocabulary: 'Ġ' stands for a space; ids 3 and 4 are the two bytes of 'é'.
  const pieces: Record<number, string> = { 1: 'Ġ', 2: 'Ġhi', 3: 'Ã', 4: '©', 5: '<|end|>' };
  const texts: Record<number, string> = { 1: ' ', 2: ' hi', 3: '\uFFFD', 4: '\uFFFD', 5: '<|end|>' };
  const tokenizer = {
    encode: (text: string) => ({ ids: text === ' ' ? [1] : [] }),
    id_to_token: (id: number) => pieces[id],
    decode: (ids: number[]) => ids.map((id) => texts[id]).join(''),
  } as unknown as TextTokenizer;

  it('gives a token the raw bytes its byte-level piece stands for', () => {
    const text = new TokenText(tokenizer);
    expect(text.bytes(2)).toEqual([32, 104, 105]);
    expect(Buffer.from([...text.bytes(3), ...text.bytes(4)]).toString('utf8')).toBe('é');
    expect(text.text(3)).toBe('\uFFFD');
    expect(text.bytes(5)).toEqual([...Buffer.from('<|end|>')]);
  });

  it('lays completions logprobs out with running text offsets and a floor for -Infinity', () => {
    const text = new TokenText(tokenizer);
    const { logprobs, offset } = completionLogprobs(
      [
        {
          tokenId: 2,
          logprob: -0.5,
          top: [
            { tokenId: 2, logprob: -0.5 },
            { tokenId: 1, logprob: -1 },
          ],
        },
        { tokenId: 1, logprob: -Infinity, top: [] },
      ],
      text,
      4,
    );
    expect(logprobs).toEqual({ tokens: [' hi', ' '], token_logprobs: [-0.5, -9999], top_logprobs: [{ ' hi': -0.5, ' ': -1 }, {}], text_offset: [4, 7] });
    expect(offset).toBe(8);
  });
});

describe('prompt logprobs on the wire', () => {
  // Not byte-level (a space is two tokens): a token's text is its decode.
  const tokenizer: TextTokenizer = {
    decode: (ids: number[]) => ids.map((i) => `t${i}`).join(''),
    encode: () => ({ ids: [7, 8] }),
    id_to_token: () => undefined,
    token_to_id: () => undefined,
    get_vocab: () => new Map(),
  };
  const text = new TokenText(tokenizer);
  const list = [
    null,
    {
      tokenId: 5,
      logprob: -1,
      rank: 2,
      top: [
        { tokenId: 6, logprob: -0.5 },
        { tokenId: 5, logprob: -1 },
      ],
    },
  ];

  it('echo: the prompt tokens lead, the first with null logprob and alternatives, offsets from 0', () => {
    const { logprobs, offset } = echoedPromptLogprobs([4, 5], list, text, 1);
    expect(logprobs).toEqual({ tokens: ['t4', 't5'], token_logprobs: [null, -1], top_logprobs: [null, { t6: -0.5 }], text_offset: [0, 2] });
    expect(offset).toBe(4);
  });

  it("vLLM's prompt_logprobs: the prompt token with its rank first, then ranked alternatives, none twice", () => {
    expect(vllmPromptLogprobs(list, text, 2)).toEqual([null, { '5': { logprob: -1, rank: 2, decoded_token: 't5' }, '6': { logprob: -0.5, rank: 1, decoded_token: 't6' } }]);
    expect(Object.keys(vllmPromptLogprobs([{ ...list[1]!, logprob: -Infinity }], text, 0)[0]!)).toEqual(['5']);
    expect(vllmPromptLogprobs([{ ...list[1]!, logprob: -Infinity }], text, 0)[0]!['5']!.logprob).toBe(-9999);
  });
});
