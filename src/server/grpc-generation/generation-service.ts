// conveyor.v1.GenerationService/Generate: one server-streaming call per generation. Deltas are
// written as engine steps produce them, with the call's flow control respected (a slow reader
// pauses consumption instead of piling messages up in memory); the final message carries the
// finish reason and usage. Cancelling the call, or its deadline passing, aborts the request,
// which frees its KV-cache blocks within one engine step (ARCHITECTURE.md principle 5). A client
// that reads nothing while the model unloads or the server drains is dropped after
// --undelivered-output-timeout-secs: the call ends UNAVAILABLE (kit/grpc/flow-control.ts).

import type { ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { LlmLookup } from '../generation/lookup.js';
import { loadServiceDefinition } from '../kit/grpc/protos.js';
import type { GrpcService } from '../kit/grpc/server.js';
import { cancelledError, toGrpcStatusWithDetails } from '../kit/grpc/status.js';
import { awaitRoom, drainOf } from '../kit/grpc/flow-control.js';
import type { LlmModel } from '../../serving/llm-backend.js';
import { deltaToWire, finalToWire, generateCallFromWire, type WireGenerateRequest, type WireGenerateResponse } from './generation-codec.js';
import { PRIORITY_HEADER, priorityOverride } from '../../serving/request-priority.js';

type GenerateCall = ServerWritableStream<WireGenerateRequest, WireGenerateResponse>;

export function generationHandlers(lookup: LlmLookup): UntypedServiceImplementation {
  return { Generate: (call: GenerateCall) => void generate(lookup, call) };
}

/** conveyor.v1.GenerationService over these LLMs, for the gRPC kit's server; protoDir holds generate.proto (default protos/). */
export function generationGrpcService(lookup: LlmLookup, protoDir?: string): GrpcService {
  return { definition: loadServiceDefinition('generate.proto', 'conveyor.v1.GenerationService', protoDir), implementation: generationHandlers(lookup) };
}

async function generate(lookup: LlmLookup, call: GenerateCall): Promise<void> {
  const controller = new AbortController();
  const onCancel = (): void => controller.abort(cancelledError());
  call.once('cancelled', onCancel);
  const requestId = call.request.request_id;
  let lease: { release(): void } | undefined;
  try {
    const { model: name, version, input } = generateCallFromWire(call.request);
    // SamplingParameters has no priority field: the call's x-vllm-priority metadata sets it.
    const priority = priorityOverride(call.metadata.get(PRIORITY_HEADER));
    lease = await lookup.acquire?.(name);
    const model = lookup.llmModel(name, version);
    const prepared = await model.prepare(priority === undefined ? input : { ...input, sampling: { ...input.sampling, priority } });
    for await (const event of model.generate(prepared, controller.signal)) {
      // Leaving the loop ends the generation (the engine is told to abort if it has not finished).
      if (call.cancelled) return;
      const messages = [...(event.text !== '' || event.tokenIds.length > 0 ? [deltaToWire(requestId, event)] : []), ...(event.finishReason !== null ? [finalToWire(requestId, event)] : [])];
      // A client dropped for reading nothing while the model goes has its call ended already.
      for (const message of messages) if (!(await write(call, message, model))) return;
    }
    if (!call.cancelled) call.end();
  } catch (error) {
    if (!call.cancelled) call.emit('error', toGrpcStatusWithDetails(error));
  } finally {
    lease?.release();
    call.removeListener('cancelled', onCancel);
  }
}

/**
 * Resolves true once grpc-js will take more (immediately unless its buffer is full) or the call is
 * gone; false when the client was dropped for reading nothing while `model` was going.
 */
function write(call: GenerateCall, message: WireGenerateResponse, model: LlmModel): Promise<boolean> {
  if (call.cancelled || call.write(message)) return Promise.resolve(true);
  return awaitRoom(call, drainOf(call), model);
}
