// What the streaming front ends (WebSocket, gRPC Generate, Triton generate and ModelStreamInfer)
// need of the server core: the LLM a request names. ConveyorService provides it.

import type { LlmModel } from '../../serving/llm-backend.js';
import type { ModelLease } from '../../serving/model-residency.js';
import type { KeepAliveMs } from '../../serving/residency-policy.js';

export interface LlmLookup {
  /** Throws INVALID_ARG for an unknown or non-generative model, NOT_FOUND for a missing version. */
  llmModel(name: string, version?: string): LlmModel;
  /** A lease on the model for one request (loads it on demand; src/serving/model-residency.ts), with the request's keep_alive if it sent one; absent, none is needed. */
  acquire?(name: string, keepAliveMs?: KeepAliveMs): Promise<ModelLease>;
}

/**
 * The LLM a stream already under way is served by, or undefined if it is gone meanwhile: the
 * streaming front ends bound their waits on a client that reads nothing by its closing
 * (src/server/kit/stalled-writes.ts).
 */
export function servingLlm(lookup: LlmLookup, name: string, version?: string): LlmModel | undefined {
  try {
    return lookup.llmModel(name, version);
  } catch {
    return undefined;
  }
}
