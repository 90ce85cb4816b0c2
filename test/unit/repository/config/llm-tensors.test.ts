import { describe, expect, it } from 'vitest';
import { LLM_INPUT_TENSORS, LLM_OUTPUT_TENSORS } from '../../../../src/contracts/triton-llm-tensors.js';
import { completeLlmTensors } from '../../../../src/repository/config/index.js';
import { TRITON_LLM_INPUTS } from '../../../../src/triton-llm/request.js';
import { input, modelConfig, output } from '../../../support/model-config.js';

const llm = (more = {}) => modelConfig({ platform: '', backend: 'llm', max_batch_size: 0, ...more });

describe("the llm backend's auto-complete", () => {
  it('adds every input and output a config leaves out, after the declared ones, keeping those as written', () => {
    const declared = input('text_input', 'TYPE_STRING', [-1]);
    const completed = completeLlmTensors(llm({ input: [declared], output: [] }));
    expect(completed.input[0]).toEqual(declared);
    expect(completed.input.map((i) => i.name)).toEqual(LLM_INPUT_TENSORS.map((t) => t.name));
    expect(completed.input.slice(1).every((i) => i.optional)).toBe(true);
    expect(completed.output).toEqual(LLM_OUTPUT_TENSORS.map((t) => output(t.name, t.data_type, [...t.dims])));
  });

  it('fills an empty config with text_input required and the rest optional', () => {
    const completed = completeLlmTensors(llm({ input: [], output: [] }));
    expect(completed.input).toEqual(LLM_INPUT_TENSORS.map((t) => input(t.name, t.data_type, [...t.dims], { optional: t.optional })));
  });

  it('leaves other backends alone', () => {
    const config = modelConfig({ input: [], output: [] });
    expect(completeLlmTensors(config)).toBe(config);
  });

  it('declares exactly the inputs the request reader accepts', () => {
    expect(Object.keys(TRITON_LLM_INPUTS).sort()).toEqual(LLM_INPUT_TENSORS.map((t) => t.name).sort());
  });
});
