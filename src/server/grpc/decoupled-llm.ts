// The ModelStreamInfer hook for LLM models (KserveGrpcOptions.decoupled): a ModelInferRequest
// in the shape Triton's vLLM backend takes (text_input, stream, max_tokens, … plus sampling in the
// request parameters) runs on the engine, and each of its answers becomes a ModelInferResponse
// with text_output. stream-infer.ts adds triton_final_response and turns failures into
// error_message on the still-open stream.

import type { InferRequest, InferResponse } from '../../contracts/infer.js';
import type { Tensor } from '../../contracts/tensors.js';
import { servingLlm, type LlmLookup } from '../generation/lookup.js';
import { buildTritonLlmRequest, tritonInputsFromTensors } from '../generation/triton-llm-request.js';
import { generateTritonLlm, type TritonLlmOutput, type TritonLlmResponse } from '../generation/triton-llm.js';
import type { DecoupledEvent, DecoupledInfer } from './stream-infer.js';

export function llmDecoupledInfer(lookup: LlmLookup): DecoupledInfer {
  return async function* streamLlm(request: InferRequest, signal: AbortSignal): AsyncGenerator<DecoupledEvent> {
    const ref = { model: request.model, version: request.version, id: request.id };
    const llm = buildTritonLlmRequest(ref, tritonInputsFromTensors(request.inputs), request.parameters);
    const wanted = request.outputs ? new Set(request.outputs.map((o) => o.name)) : undefined;
    // The model that will serve it, taken before generating: its closing bounds the wait on a
    // client that reads nothing. Looked up at the first response instead, it was already gone
    // when the unload began before the first token, and the writes waited unbounded.
    const model = servingLlm(lookup, llm.model, llm.version);
    for await (const response of generateTritonLlm(lookup, llm, signal)) {
      yield { response: toInferResponse(response, wanted), final: response.final, ...(model ? { model } : {}) };
    }
  };
}

function toInferResponse(response: TritonLlmResponse, wanted: ReadonlySet<string> | undefined): InferResponse {
  // Triton returns only the requested outputs when the request names any.
  const outputs = response.outputs.filter((o) => !wanted || wanted.has(o.name)).map(toTensor);
  return { model: response.model, version: response.version, ...(response.id ? { id: response.id } : {}), outputs };
}

function toTensor(output: TritonLlmOutput): Tensor {
  const data = output.datatype === 'BYTES' ? [Buffer.from(String(output.value), 'utf8')] : Uint32Array.of(Number(output.value));
  return { name: output.name, datatype: output.datatype, shape: [1], data };
}
