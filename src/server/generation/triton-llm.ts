// A Triton-style LLM request run on the LLM the lookup names: the front ends' way to
// LlmModel.tritonGenerate, which shapes the answers as Triton's vLLM backend does
// (src/triton-llm/responses.ts). The HTTP generate extension formats them as JSON.

import type { TritonLlmRequest } from '../../triton-llm/request.js';
import type { TritonLlmResponse } from '../../triton-llm/responses.js';
import type { LlmLookup } from './lookup.js';

export type { TritonLlmOutput, TritonLlmResponse } from '../../triton-llm/responses.js';

/**
 * The model is looked up, and the request validated and tokenized, on the first next(), so a
 * refused request throws before any response exists. Aborting `signal` ends the generation
 * within an engine step; the last response then reports finish_reason "abort".
 */
export async function* generateTritonLlm(lookup: LlmLookup, request: TritonLlmRequest, signal: AbortSignal): AsyncGenerator<TritonLlmResponse> {
  yield* lookup.llmModel(request.model, request.version).tritonGenerate(request, signal);
}
