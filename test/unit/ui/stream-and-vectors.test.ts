import { describe, expect, it } from 'vitest';
import { applyChunk, chatRequest, emptyProgress } from '../../../ui/src/chat-chunks.js';
import { SseParser } from '../../../ui/src/sse.js';
import { cosineSimilarity, parseClassification, rgbaToChw } from '../../../ui/src/vectors.js';

describe('SseParser', () => {
  it('returns the data of each complete event, however the chunks split it', () => {
    const parser = new SseParser();
    expect(parser.feed('data: {"a":')).toEqual([]);
    expect(parser.feed('1}\n\ndata: [DO')).toEqual(['{"a":1}']);
    expect(parser.feed('NE]\r\n\r\n: comment\n\nevent: x\ndata: one\ndata:two\n\n')).toEqual(['[DONE]', 'one\ntwo']);
  });
});

describe('chat stream', () => {
  it('builds the OpenAI request from the controls, leaving unset ones out', () => {
    const body = chatRequest('m', [{ role: 'user', content: 'hi' }], { temperature: 0.5, top_k: undefined, seed: Number.NaN, stop: ['\n'], schema: { type: 'object' } });
    expect(body).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.5,
      stop: ['\n'],
      response_format: { type: 'json_schema', json_schema: { name: 'playground', schema: { type: 'object' } } },
    });
    expect(chatRequest('m', [], { stop: [] })).not.toHaveProperty('stop');
  });

  it('keeps reasoning apart from the answer and measures TTFT and decode speed', () => {
    const progress = emptyProgress();
    applyChunk(progress, { choices: [{ delta: { reasoning_content: 'hmm' } }] }, 50);
    applyChunk(progress, { choices: [{ delta: { content: 'Hel' } }] }, 60);
    applyChunk(progress, { choices: [{ delta: { content: 'lo' }, finish_reason: 'stop' }] }, 70);
    expect([progress.reasoning, progress.content, progress.finishReason, progress.ttftMs]).toEqual(['hmm', 'Hello', 'stop', 50]);
    // 3 deltas, the last 20 ms after the first: 2 tokens in 20 ms.
    expect(progress.tokensPerSec).toBeCloseTo(100);
    applyChunk(progress, { choices: [], usage: { prompt_tokens: 9, completion_tokens: 5 } }, 70);
    expect([progress.promptTokens, progress.completionTokens, progress.tokensPerSec]).toEqual([9, 5, 200]);
  });
});

describe('vectors', () => {
  it('cosine similarity', () => {
    expect(cosineSimilarity([1, 0], [1, 0])).toBe(1);
    expect(cosineSimilarity([1, 0], [0, 2])).toBe(0);
    expect(cosineSimilarity([1, 1], [-1, -1])).toBeCloseTo(-1);
    expect(cosineSimilarity([0, 0], [1, 1])).toBe(0);
  });

  it('RGBA pixels to a normalized channel-major tensor', () => {
    const chw = rgbaToChw([255, 0, 0, 255, 0, 255, 0, 255], 2, 1);
    expect(Array.from(chw).map((v) => Number(v.toFixed(3)))).toEqual([2.249, -2.118, -2.036, 2.429, -1.804, -1.804]);
  });

  it("reads Triton's classification strings, a label with colons included", () => {
    expect(parseClassification(['0.9:3:cat', '0.1:7', '0.05:2:a:b'])).toEqual([
      { score: 0.9, index: 3, label: 'cat' },
      { score: 0.1, index: 7, label: 'class 7' },
      { score: 0.05, index: 2, label: 'a:b' },
    ]);
  });
});
