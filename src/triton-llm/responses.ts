// An LLM's generation events shaped as Triton's vLLM backend answers: text_output per engine step
// when streaming (the last one final), otherwise one final response with the whole text, the
// prompt prepended unless exclude_input_in_output; the return_* outputs when asked. Pure: the
// serving layer feeds it the model's events (LlmModel.tritonGenerate), and the front ends and BLS
// calls read its responses as JSON keys (generate) or as tensors (ModelStreamInfer, inferStream).

import type { InferResponse } from '../contracts/infer.js';
import type { Tensor } from '../contracts/tensors.js';
import type { GenerationEvent } from '../contracts/text-generation.js';
import type { LlmOutputName } from '../contracts/triton-llm-tensors.js';
import type { TritonLlmRequest } from './request.js';

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

/** Who answers: the model and version serving the request. */
export interface TritonLlmResponder {
  readonly model: string;
  readonly version: string;
}

/** The request's responses, one per event when streaming, else one final response. */
export async function* tritonLlmResponses(request: TritonLlmRequest, responder: TritonLlmResponder, events: AsyncIterable<GenerationEvent>): AsyncGenerator<TritonLlmResponse> {
  const base = { ...responder, ...(request.id ? { id: request.id } : {}) };
  let text = request.excludeInputInOutput ? '' : request.prompt;
  let reportedTokens = 0;
  for await (const event of events) {
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

/**
 * A response as KServe tensors (shape [1] each). `wanted`: the outputs the request names, if
 * any; Triton returns only those then.
 */
export function tritonLlmInferResponse(response: TritonLlmResponse, wanted?: ReadonlySet<string>): InferResponse {
  const outputs = response.outputs.filter((o) => !wanted || wanted.has(o.name)).map(outputTensor);
  return { model: response.model, version: response.version, ...(response.id ? { id: response.id } : {}), outputs };
}

function outputTensor(output: TritonLlmOutput): Tensor {
  const data = output.datatype === 'BYTES' ? [Buffer.from(String(output.value), 'utf8')] : Uint32Array.of(Number(output.value));
  return { name: output.name, datatype: output.datatype, shape: [1], data };
}
