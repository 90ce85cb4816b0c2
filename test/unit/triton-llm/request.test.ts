// Triton-style LLM requests read into one shape: tensors or JSON inputs, parameters with string
// values converted, reserved parameters left alone, unknown ones refused by name.
import { describe, expect, it } from 'vitest';
import { buildTritonLlmRequest, samplingParams, tritonInputsFromTensors } from '../../../src/triton-llm/request.js';

const ref = { model: 'm' };

describe('Triton LLM requests', () => {
  it('reads one-element tensors of any integer type', () => {
    const inputs = tritonInputsFromTensors([
      { name: 'text_input', datatype: 'BYTES', shape: [1], data: [Buffer.from('héllo')] },
      { name: 'stream', datatype: 'BOOL', shape: [1, 1], data: Uint8Array.of(1) },
      { name: 'max_tokens', datatype: 'INT64', shape: [1], data: BigInt64Array.of(7n) },
    ]);
    expect(inputs).toEqual({ text_input: 'héllo', stream: true, max_tokens: 7 });
    expect(() => tritonInputsFromTensors([{ name: 'text_input', datatype: 'BYTES', shape: [2], data: [Buffer.from('a'), Buffer.from('b')] }])).toThrow(/exactly one element/);
    expect(() => tritonInputsFromTensors([{ name: 'image', datatype: 'BYTES', shape: [1], data: [Buffer.from('a')] }])).toThrow(/unexpected inference input 'image'/);
  });

  it('prepends the prompt unless streaming or excluded, and forbids including it while streaming', () => {
    expect(buildTritonLlmRequest(ref, { text_input: 'p' }, {})).toMatchObject({ prompt: 'p', stream: false, excludeInputInOutput: false });
    expect(buildTritonLlmRequest(ref, { text_input: 'p', stream: true }, {})).toMatchObject({ stream: true, excludeInputInOutput: true });
    expect(buildTritonLlmRequest(ref, { text_input: 'p' }, { stream: 'true' })).toMatchObject({ stream: true });
    expect(() => buildTritonLlmRequest(ref, { text_input: 'p', stream: true, exclude_input_in_output: false }, {})).toThrow(/exclude_input_in_output/);
    expect(() => buildTritonLlmRequest(ref, {}, {})).toThrow(/text_input/);
  });

  it('converts string parameter values and lets the max_tokens input win', () => {
    const request = buildTritonLlmRequest(
      ref,
      { text_input: 'p', max_tokens: 5 },
      {
        temperature: '0.5',
        top_k: 40n,
        ignore_eos: 'TRUE',
        stop: '["a","b"]',
        stop_token_ids: '[1, 2]',
        logit_bias: '{"3": -1}',
        max_tokens: 99,
        triton_enable_empty_final_response: true,
        priority: 1,
        sequence_id: 4,
      },
    );
    expect(request.sampling).toEqual({ temperature: 0.5, top_k: 40, ignore_eos: true, stop: ['a', 'b'], stop_token_ids: [1, 2], logit_bias: { 3: -1 }, max_tokens: 5 });
    expect(samplingParams({ stop: 'plain' })).toEqual({ stop: 'plain' });
    expect(samplingParams({ temperature: 'warm' })).toEqual({ temperature: 'warm' }); // left for the validator to name
  });

  it('takes sampling_parameters JSON instead of the request parameters', () => {
    const request = buildTritonLlmRequest(ref, { text_input: 'p', sampling_parameters: '{"temperature": 0, "seed": 3}' }, { temperature: 1 });
    expect(request.sampling).toEqual({ temperature: 0, seed: 3 });
    expect(() => buildTritonLlmRequest(ref, { text_input: 'p', sampling_parameters: '[1]' }, {})).toThrow(/JSON object/);
  });

  it('refuses unsupported parameters by name', () => {
    expect(() => samplingParams({ best_of: 2, n: 3 })).toThrow(/unsupported parameters: best_of, n/);
    expect(() => samplingParams({ logit_bias: 'not json' })).toThrow(/logit_bias must be JSON/);
  });

  it('refuses a parameter named __proto__ by name instead of reading its fields as parameters', () => {
    const parameters = JSON.parse('{"__proto__": {"temperature": 0.5}}');
    expect(() => buildTritonLlmRequest(ref, { text_input: 'p' }, parameters)).toThrow(/unsupported parameter: __proto__/);
  });
});
