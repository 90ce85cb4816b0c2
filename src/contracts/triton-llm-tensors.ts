// The one declaration of the tensors an LLM (backend "llm") takes and gives in Triton's shape,
// with the names and types of Triton's vLLM backend. The request reader (src/server/generation)
// derives what it accepts from it, and the config layer (src/repository/config) adds every
// tensor a model's config leaves out, as the vLLM backend's auto-complete does, so model
// metadata and config show all of them. Pure data.

/** One input or output: config.pbtxt's name, data type and dims (no batch dimension: max_batch_size is 0). */
export interface LlmTensorDeclaration {
  readonly name: string;
  readonly data_type: 'TYPE_STRING' | 'TYPE_BOOL' | 'TYPE_INT32' | 'TYPE_UINT32';
  readonly dims: readonly number[];
}

/** Inputs in the vLLM backend's order; every one but text_input is optional. max_tokens is Conveyor's own (the vLLM backend takes it only as a sampling parameter). */
export const LLM_INPUT_TENSORS = [
  { name: 'text_input', data_type: 'TYPE_STRING', dims: [1], optional: false },
  { name: 'stream', data_type: 'TYPE_BOOL', dims: [1], optional: true },
  { name: 'sampling_parameters', data_type: 'TYPE_STRING', dims: [1], optional: true },
  { name: 'exclude_input_in_output', data_type: 'TYPE_BOOL', dims: [1], optional: true },
  { name: 'return_finish_reason', data_type: 'TYPE_BOOL', dims: [1], optional: true },
  { name: 'return_num_input_tokens', data_type: 'TYPE_BOOL', dims: [1], optional: true },
  { name: 'return_num_output_tokens', data_type: 'TYPE_BOOL', dims: [1], optional: true },
  { name: 'max_tokens', data_type: 'TYPE_INT32', dims: [1], optional: true },
] as const satisfies readonly (LlmTensorDeclaration & { readonly optional: boolean })[];

/** Outputs: text_output always; the others when the matching return_* input asks for them. */
export const LLM_OUTPUT_TENSORS = [
  { name: 'text_output', data_type: 'TYPE_STRING', dims: [-1] },
  { name: 'finish_reason', data_type: 'TYPE_STRING', dims: [-1] },
  { name: 'num_input_tokens', data_type: 'TYPE_UINT32', dims: [1] },
  { name: 'num_output_tokens', data_type: 'TYPE_UINT32', dims: [-1] },
] as const satisfies readonly LlmTensorDeclaration[];

export type LlmInputName = (typeof LLM_INPUT_TENSORS)[number]['name'];
export type LlmOutputName = (typeof LLM_OUTPUT_TENSORS)[number]['name'];
