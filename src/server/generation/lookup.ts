// What the streaming front ends (WebSocket, gRPC Generate, Triton generate and ModelStreamInfer)
// need of the server core: the LLM a request names. ConveyorService provides it.

import type { LlmModel } from '../../serving/llm-backend.js';

export interface LlmLookup {
  /** Throws INVALID_ARG for an unknown or non-generative model, NOT_FOUND for a missing version. */
  llmModel(name: string, version?: string): LlmModel;
}
