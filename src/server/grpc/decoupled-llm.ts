// The ModelStreamInfer hook for LLM models (KserveGrpcOptions.decoupled): the LLM streams a
// ModelInferRequest in the shape Triton's vLLM backend takes (LlmModel.inferStream, translated by
// src/triton-llm), and each event carries the model so that a client reading nothing while it
// unloads is bounded (kit/grpc/flow-control.ts). stream-infer.ts adds triton_final_response and
// turns failures into error_message on the still-open stream.

import type { InferRequest, InferStreamEvent } from '../../contracts/infer.js';
import type { LlmModel } from '../../serving/llm-backend.js';
import { servingLlm, type LlmLookup } from '../generation/lookup.js';
import type { DecoupledEvent, DecoupledInfer } from './stream-infer.js';

export function llmDecoupledInfer(lookup: LlmLookup): DecoupledInfer {
  return (request: InferRequest, signal: AbortSignal): AsyncIterable<DecoupledEvent> | undefined => {
    // Not an LLM (or not loaded): the model streams by itself, or the service says why not.
    const model = servingLlm(lookup, request.model, request.version);
    if (model === undefined) return undefined;
    return withModel(model, model.inferStream(request, signal));
  };
}

async function* withModel(model: LlmModel, events: AsyncIterable<InferStreamEvent>): AsyncGenerator<DecoupledEvent> {
  for await (const event of events) yield { ...event, model };
}
