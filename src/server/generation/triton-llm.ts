// Runs a Triton-style LLM request on the engine and shapes its answers as Triton's vLLM backend
// does: text_output per engine step when streaming (the last one final), otherwise one final
// response with the whole text, the prompt prepended unless exclude_input_in_output. Both the
// ModelStreamInfer hook (tensors) and the HTTP generate extension (JSON) format these responses.

import type { LlmOutputName } from '../../contracts/triton-llm-tensors.js';
import type { LlmLookup } from './lookup.js';
import type { TritonLlmRequest } from './triton-llm-request.js';

export interface TritonLlmOutput {
  readonly name: LlmOutputName;
  readonly datatype: 'BYTES' | 'UINT32';
  readonly value: string | number;
}

export interface TritonLlmResponse {
  readonly model: string;
  readonly version: string;
  readonly id?: string;
  readonly outputs: readonly TritonLlmOutput[];
  /** True on the request's last response (triton_final_response). */
  readonly final: boolean;
}

/**
 * Validation and tokenization run on the first next(), so a refused request throws before any
 * response exists. Aborting `signal` ends the generation within an engine step; the last
 * response then reports finish_reason "abort".
 */
export async function* generateTritonLlm(lookup: LlmLookup, request: TritonLlmRequest, signal: AbortSignal): AsyncGenerator<TritonLlmResponse> {
  const model = lookup.llmModel(request.model, request.version);
  const prepared = await model.prepare({ prompt: { kind: 'text', text: request.prompt }, sampling: request.sampling });
  const base = { model: model.name, version: String(model.version), ...(request.id ? { id: request.id } : {}) };
  let text = request.excludeInputInOutput ? '' : request.prompt;
  let reportedTokens = 0;
  for await (const event of model.generate(prepared, signal)) {
    const final = event.finishReason !== null;
    if (!request.stream) {
      text += event.text;
      if (!final) continue;
    }
    const outputs: TritonLlmOutput[] = [{ name: 'text_output', datatype: 'BYTES', value: request.stream ? event.text : text }];
    // The vLLM backend prints Python's None for a request still running.
    if (request.returnFinishReason) outputs.push({ name: 'finish_reason', datatype: 'BYTES', value: event.finishReason ?? 'None' });
    if (request.returnNumInputTokens) outputs.push({ name: 'num_input_tokens', datatype: 'UINT32', value: event.usage.promptTokens });
    if (request.returnNumOutputTokens) {
      outputs.push({ name: 'num_output_tokens', datatype: 'UINT32', value: event.usage.completionTokens - reportedTokens });
      reportedTokens = event.usage.completionTokens;
    }
    yield { ...base, outputs, final };
  }
}
