// vLLM's token-in / token-out route, POST /inference/v1/generate, on the real server over raw
// HTTP with vLLM's exact GenerateRequest (every field its render routes write, SamplingParams as
// vLLM serializes it): token ids out, equal to /v1/completions' for the same token prompt
// (greedy), whole and streamed; the stop token that finished a choice ends its token_ids, with
// its logprob; logprobs spelled token_id:<id>; prompt_logprobs; n; a render route's answer posted
// as is; bad input a 400 in OpenAI's shape naming the field.

import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { useLlmServerWithClient } from '../support/generation.js';
import { postSse } from '../support/streams.js';

const llm = useLlmServerWithClient();

const post = async (path: string, body: unknown) => {
  const response = await fetch(`${llm.server.http}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  // Read loosely (test/support/fetch-json.d.ts), asserted field by field.
  return { status: response.status, body: await response.json() };
};

const PROMPT = 'The quick brown fox jumps over the lazy dog';
const promptIds = async (): Promise<number[]> => (await post('/tokenize', { model: 'qwen3', prompt: PROMPT })).body.tokens;

/** vLLM's SamplingParams as its clients serialize it (every member at its default but the ones set). */
function samplingParams(overrides: Record<string, unknown>): Record<string, unknown> {
  return {
    n: 1,
    presence_penalty: 0,
    frequency_penalty: 0,
    repetition_penalty: 1,
    temperature: 0,
    top_p: 1,
    top_k: 0,
    min_p: 0,
    seed: null,
    stop: [],
    stop_token_ids: [],
    ignore_eos: false,
    max_tokens: 8,
    min_tokens: 0,
    logprobs: null,
    prompt_logprobs: null,
    flat_logprobs: false,
    detokenize: true,
    skip_special_tokens: true,
    spaces_between_special_tokens: true,
    logits_processors: null,
    include_stop_str_in_output: false,
    truncate_prompt_tokens: null,
    output_kind: 0,
    structured_outputs: null,
    logit_bias: null,
    allowed_token_ids: null,
    extra_args: null,
    bad_words: null,
    ...overrides,
  };
}

/** vLLM's GenerateRequest, every field written. */
const generateRequest = (tokenIds: number[], sampling: Record<string, unknown>, top: Record<string, unknown> = {}) => ({
  request_id: 'rl-rollout-7',
  token_ids: tokenIds,
  features: null,
  sampling_params: samplingParams(sampling),
  model: 'qwen3',
  stream: false,
  stream_options: null,
  cache_salt: null,
  priority: 0,
  kv_transfer_params: null,
  ...top,
});

const TOKEN_ID = /^token_id:(\d+)$/;
const idOf = (token: string): number => Number(TOKEN_ID.exec(token)![1]);

/** The ids /v1/completions generates for a token prompt, greedy, read from its token_id-spelled logprobs. */
async function completionIds(prompt: number[], maxTokens: number): Promise<number[]> {
  const completion = await llm.client.completions.create({
    model: 'qwen3',
    prompt,
    max_tokens: maxTokens,
    temperature: 0,
    logprobs: 0,
    ignore_eos: true,
    return_tokens_as_token_ids: true,
  } as OpenAI.CompletionCreateParamsNonStreaming);
  return completion.choices[0]!.logprobs!.tokens!.map(idOf);
}

describe('POST /inference/v1/generate', () => {
  it("answers vLLM's GenerateResponse with the ids /v1/completions generates for the same token prompt", async () => {
    const prompt = await promptIds();
    const { status, body } = await post('/inference/v1/generate', generateRequest(prompt, { max_tokens: 8, ignore_eos: true }));
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['request_id', 'choices', 'prompt_logprobs', 'kv_transfer_params']);
    expect(body).toMatchObject({ request_id: 'rl-rollout-7', prompt_logprobs: null, kv_transfer_params: null });
    expect(body.choices).toHaveLength(1);
    const [choice] = body.choices;
    expect(Object.keys(choice).sort()).toEqual(['finish_reason', 'index', 'logprobs', 'token_ids']);
    expect(choice).toMatchObject({ index: 0, logprobs: null, finish_reason: 'length' });
    expect(choice.token_ids).toEqual(await completionIds(prompt, 8));
  });

  it('gives logprobs as chat content spelled token_id:<id>, one per returned id', async () => {
    const prompt = await promptIds();
    const { body } = await post('/inference/v1/generate', generateRequest(prompt, { max_tokens: 6, ignore_eos: true, logprobs: 2 }));
    const [choice] = body.choices;
    const content = choice.logprobs.content;
    expect(content.map((entry: { token: string }) => idOf(entry.token))).toEqual(choice.token_ids);
    for (const entry of content) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.bytes).toEqual([...Buffer.from(entry.token)]);
      expect(entry.top_logprobs).toHaveLength(2);
      for (const top of entry.top_logprobs) expect(top.token).toMatch(TOKEN_ID);
    }
  });

  it('streams data: chunks whose token_ids add up to the whole answer, usage last, then [DONE]', async () => {
    const prompt = await promptIds();
    const request = generateRequest(prompt, { max_tokens: 8, ignore_eos: true, logprobs: 0 });
    const whole = (await post('/inference/v1/generate', request)).body.choices[0];
    const sse = await postSse(`${llm.server.http}/inference/v1/generate`, { ...request, stream: true, stream_options: { include_usage: true } });
    expect(sse.status).toBe(200);
    const frames = await sse.ended;
    expect(frames.at(-1)).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map((frame) => JSON.parse(frame));
    for (const chunk of chunks) expect(chunk.request_id).toBe('rl-rollout-7');
    const usageChunk = chunks.at(-1);
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toMatchObject({ prompt_tokens: prompt.length, completion_tokens: 8, total_tokens: prompt.length + 8 });
    const pieces = chunks.slice(0, -1).map((chunk) => {
      expect(chunk.usage).toBeNull();
      expect(chunk.choices).toHaveLength(1);
      return chunk.choices[0];
    });
    expect(pieces.flatMap((piece) => piece.token_ids)).toEqual(whole.token_ids);
    expect(pieces.flatMap((piece) => piece.logprobs.content.map((entry: { token: string }) => idOf(entry.token)))).toEqual(whole.token_ids);
    expect(pieces.slice(0, -1).every((piece) => piece.finish_reason === null)).toBe(true);
    expect(pieces.at(-1).finish_reason).toBe('length');
  });

  it('ends token_ids with the stop token that finished the choice, and gives its logprob', async () => {
    const prompt = await promptIds();
    const greedy = await completionIds(prompt, 8);
    const stopId = greedy[2]!;
    const first = greedy.indexOf(stopId);
    const { body } = await post('/inference/v1/generate', generateRequest(prompt, { max_tokens: 8, stop_token_ids: [stopId], logprobs: 1 }));
    const [choice] = body.choices;
    expect(choice.finish_reason).toBe('stop');
    expect(choice.token_ids).toEqual(greedy.slice(0, first + 1));
    expect(choice.logprobs.content.map((entry: { token: string }) => idOf(entry.token))).toEqual(choice.token_ids);
  });

  it("takes a render route's GenerateRequest as it comes", async () => {
    const rendered = await post('/v1/completions/render', { model: 'qwen3', prompt: PROMPT, max_tokens: 5, temperature: 0, ignore_eos: true });
    expect(rendered.status).toBe(200);
    const { status, body } = await post('/inference/v1/generate', rendered.body[0]);
    expect(status).toBe(200);
    expect(body.request_id).toBe(rendered.body[0].request_id);
    expect(body.choices[0].token_ids).toEqual(await completionIds(await promptIds(), 5));
  });

  it('returns n choices and vLLM prompt_logprobs', async () => {
    const prompt = await promptIds();
    const { body } = await post('/inference/v1/generate', generateRequest(prompt, { n: 2, temperature: 1, seed: 11, max_tokens: 4, ignore_eos: true, prompt_logprobs: 1 }));
    expect(body.choices.map((c: { index: number }) => c.index)).toEqual([0, 1]);
    for (const choice of body.choices) expect(choice.token_ids).toHaveLength(4);
    expect(body.prompt_logprobs).toHaveLength(prompt.length);
    expect(body.prompt_logprobs[0]).toBeNull();
    body.prompt_logprobs.slice(1).forEach((entry: Record<string, { rank: number; decoded_token: string }>, i: number) => expect(Object.keys(entry)).toContain(String(prompt[i + 1])));
  });

  it('refuses bad input with a 400 in OpenAI shape naming the field', async () => {
    const prompt = await promptIds();
    const { max_model_len: context } = (await llm.client.models.retrieve('qwen3')) as unknown as { max_model_len: number };
    const cases: [Record<string, unknown>, string, string][] = [
      [generateRequest([...prompt, 10_000_000], {}), 'token_ids', 'invalid_request_error'],
      [generateRequest([...prompt, -1], {}), 'token_ids', 'invalid_request_error'],
      [generateRequest([], {}), 'token_ids', 'invalid_request_error'],
      [generateRequest(new Array(context).fill(prompt[0]), {}), 'token_ids', 'invalid_request_error'],
      [generateRequest(prompt, { top_p: 2 }), 'sampling_params.top_p', 'invalid_request_error'],
      [generateRequest(prompt, { max_tokens: context }), 'sampling_params.max_tokens', 'invalid_request_error'],
      [generateRequest(prompt, { n: 0 }), 'sampling_params.n', 'invalid_request_error'],
      [generateRequest(prompt, { not_a_param: 1 }), 'sampling_params.not_a_param', 'invalid_request_error'],
      [generateRequest(prompt, { allowed_token_ids: [1, 2] }), 'sampling_params.allowed_token_ids', 'invalid_request_error'],
      [generateRequest(prompt, {}, { features: { mm_hashes: {}, mm_placeholders: {} } }), 'features', 'invalid_request_error'],
      [generateRequest(prompt, {}, { kv_transfer_params: { do_remote_prefill: true } }), 'kv_transfer_params', 'invalid_request_error'],
      [generateRequest(prompt, {}, { priority: 'high' }), 'priority', 'invalid_request_error'],
      [generateRequest(prompt, {}, { prompt: 'text' }), 'prompt', 'invalid_request_error'],
    ];
    for (const [request, param, type] of cases) {
      const { status, body } = await post('/inference/v1/generate', request);
      expect({ param, status }).toEqual({ param, status: 400 });
      expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
      expect(body.error).toMatchObject({ param, type });
    }
  });
});
