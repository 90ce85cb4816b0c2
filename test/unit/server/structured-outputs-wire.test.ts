// Structured outputs as the gRPC and Triton front ends carry them to the vocabulary: the proto's
// oneof and Triton's vLLM-style parameters (objects or JSON text) reach the same GrammarSpec.
import { describe, expect, it } from 'vitest';
import { samplingFromWire, type WireSamplingParameters } from '../../../src/server/grpc-generation/generation-codec.js';
import { samplingParams } from '../../../src/triton-llm/request.js';
import { validateSamplingParams } from '../../../src/vocabulary/sampling-params.js';

const LIMITS = { vocabSize: 1000 };
const grammarOf = (raw: ReturnType<typeof samplingParams>) => validateSamplingParams(raw, LIMITS).grammar;
const grpc = (structured: WireSamplingParameters['structured_outputs']): WireSamplingParameters => ({ stop: [], stop_token_ids: [], logit_bias: {}, structured_outputs: structured });

describe('gRPC SamplingParameters.structured_outputs', () => {
  it('takes the set oneof member', () => {
    expect(grammarOf(samplingFromWire(grpc({ constraint: 'json', json: '{"type":"object"}' })))).toEqual({ kind: 'json_schema', schema: '{"type":"object"}' });
    expect(grammarOf(samplingFromWire(grpc({ constraint: 'choice', choice: { choices: ['a', 'b'] } })))).toEqual({ kind: 'choice', choices: ['a', 'b'] });
    expect(grammarOf(samplingFromWire(grpc({ constraint: 'json_object', json_object: true })))).toEqual({ kind: 'json_object' });
    expect(grammarOf(samplingFromWire(grpc(null)))).toBeNull();
  });
  it('names the member at fault', () => {
    expect(() => validateSamplingParams(samplingFromWire(grpc({ constraint: 'regex', regex: '(' })), LIMITS)).toThrow(expect.objectContaining({ param: 'structured_outputs.regex' }));
  });
});

describe('Triton parameters', () => {
  it('accept structured_outputs, guided_decoding and guided_* as objects or JSON text', () => {
    expect(grammarOf(samplingParams({ structured_outputs: '{"regex":"[0-9]+"}' }))).toEqual({ kind: 'regex', pattern: '[0-9]+' });
    expect(grammarOf(samplingParams({ guided_decoding: { choice: ['x'] } }))).toEqual({ kind: 'choice', choices: ['x'] });
    expect(grammarOf(samplingParams({ guided_json: '{"type":"string"}' }))).toEqual({ kind: 'json_schema', schema: '{"type":"string"}' });
    expect(grammarOf(samplingParams({ guided_choice: '["a","b"]' }))).toEqual({ kind: 'choice', choices: ['a', 'b'] });
  });
  it("refuse OpenAI's response_format by name", () => {
    expect(() => samplingParams({ response_format: '{"type":"json_object"}' })).toThrow(expect.objectContaining({ param: 'response_format' }));
  });
});
