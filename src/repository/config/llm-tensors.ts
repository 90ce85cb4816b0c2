// Auto-completing an LLM's config (backend "llm") the way Triton's vLLM backend does on load:
// every input and output the server handles (src/contracts/triton-llm-tensors.ts) that the
// config does not declare is added after the declared ones, so model metadata and config list
// them all and clients such as perf_analyzer accept requests that use them. Declared tensors are
// kept as written. Pure; the argument is not modified.

import type { ModelConfig, ModelInput, ModelOutput } from '../../contracts/model-config.js';
import { LLM_INPUT_TENSORS, LLM_OUTPUT_TENSORS } from '../../contracts/triton-llm-tensors.js';

export function completeLlmTensors(config: ModelConfig): ModelConfig {
  if (config.backend !== 'llm') return config;
  const declaredInputs = new Set(config.input.map((t) => t.name));
  const declaredOutputs = new Set(config.output.map((t) => t.name));
  const inputs: ModelInput[] = LLM_INPUT_TENSORS.filter((t) => !declaredInputs.has(t.name)).map((t) => ({
    name: t.name,
    data_type: t.data_type,
    format: 'FORMAT_NONE',
    dims: [...t.dims],
    is_shape_tensor: false,
    allow_ragged_batch: false,
    optional: t.optional,
    is_non_linear_format_io: false,
  }));
  const outputs: ModelOutput[] = LLM_OUTPUT_TENSORS.filter((t) => !declaredOutputs.has(t.name)).map((t) => ({
    name: t.name,
    data_type: t.data_type,
    dims: [...t.dims],
    label_filename: '',
    is_shape_tensor: false,
    is_non_linear_format_io: false,
  }));
  return { ...config, input: [...config.input, ...inputs], output: [...config.output, ...outputs] };
}
