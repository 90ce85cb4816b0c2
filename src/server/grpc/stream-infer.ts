// ModelStreamInfer: one bidirectional stream carrying many requests. Requests run concurrently
// and each answer goes out when ready (clients match them by id); a failed request becomes an
// error_message on the stream, which stays open. A call made with Triton's `triton_grpc_error:
// true` metadata instead ends at its first failure with that error's gRPC status (load shedding:
// UNAVAILABLE with the wait as trailing metadata), as Triton does. Cancelling the call aborts
// every request still running on it (ARCHITECTURE.md principle 5). A client that reads nothing
// while the model behind a decoupled request unloads or the server drains is dropped after
// --undelivered-output-timeout-secs: the call ends UNAVAILABLE with every request on it
// (kit/grpc/flow-control.ts).

import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { InferRequest, InferResponse } from '../../contracts/infer.js';
import type { InferenceService } from '../../contracts/inference-service.js';
import { asConveyorError, ConveyorError } from '../../errors.js';
import { inferRequestFromWire, inferResponseToWire } from './infer-codec.js';
import { cancelledError, toGrpcStatusWithDetails } from '../kit/grpc/status.js';
import { awaitRoom, drainOf } from '../kit/grpc/flow-control.js';
import type { LlmModel } from '../../serving/llm-backend.js';
import type { WireInferRequest, WireInferResponse, WireStreamInferResponse } from './wire-types.js';

/** One response of a decoupled model; `response` is absent on a flags-only final. */
export interface DecoupledEvent {
  readonly response?: InferResponse;
  /** True on the request's last event. */
  readonly final: boolean;
  /** The model producing it: while it is going, a client that reads nothing is dropped (kit/grpc/flow-control.ts). */
  readonly model?: LlmModel;
}

/**
 * The hook for decoupled (LLM) models: runs one request and yields its responses as they are
 * produced, ending after the event with `final: true`; undefined for a model it does not serve.
 * `signal` aborts when the client cancels.
 * llmDecoupledInfer (decoupled-llm.ts) supplies it for LLM models through
 * GrpcServerOptions.decoupled; without one, a decoupled model answers UNSUPPORTED as an error_message.
 */
export type DecoupledInfer = (request: InferRequest, signal: AbortSignal) => AsyncIterable<DecoupledEvent> | undefined;

type StreamCall = ServerDuplexStream<WireInferRequest, WireStreamInferResponse>;

/**
 * Whether the model declares model_transaction_policy { decoupled: true }. An unknown model is
 * reported as not decoupled so that infer() raises the catalog's error for it.
 */
export function isDecoupled(service: InferenceService, model: string, version?: string): boolean {
  try {
    return service.modelConfig(model, version).model_transaction_policy?.decoupled === true;
  } catch {
    return false;
  }
}

export function handleModelStreamInfer(service: InferenceService, decoupled?: DecoupledInfer): (call: StreamCall) => void {
  return (call) => {
    const controller = new AbortController();
    const pending = new Set<Promise<void>>();
    let clientDone = false;
    const finishIfIdle = () => {
      if (clientDone && pending.size === 0 && !controller.signal.aborted) call.end();
    };
    // grpc-js buffers whatever the client has not read yet; a slow reader makes writers wait
    // (one shared wait per call) instead of growing that buffer.
    let drained: Promise<void> | undefined;
    const waitForDrain = (): Promise<void> => (drained ??= drainOf(call, controller.signal).finally(() => (drained = undefined)));
    const write = async (message: WireStreamInferResponse, model?: LlmModel): Promise<void> => {
      if (controller.signal.aborted || call.write(message)) return;
      // Dropped (the call ended UNAVAILABLE), the call's other requests end with it.
      if (!(await awaitRoom(call, waitForDrain(), model))) controller.abort(cancelledError());
    };
    // Triton's opt-in: the first failure ends the call with its status, and the requests still running with it.
    const fail = call.metadata.get('triton_grpc_error')[0] === 'true' ? (error: unknown) => failCall(call, controller, error) : undefined;

    call.on('cancelled', () => controller.abort(cancelledError()));
    call.on('data', (wire: WireInferRequest) => {
      const task = runRequest(wire, { service, decoupled, signal: controller.signal, write, ...(fail ? { fail } : {}) }).finally(() => {
        pending.delete(task);
        finishIfIdle();
      });
      pending.add(task);
    });
    call.on('end', () => {
      clientDone = true;
      finishIfIdle();
    });
    // A transport error ends the call; treat it like a cancellation of the work in flight.
    call.on('error', () => controller.abort(cancelledError()));
  };
}

interface RequestContext {
  readonly service: InferenceService;
  readonly decoupled: DecoupledInfer | undefined;
  readonly signal: AbortSignal;
  /** Resolves when the stream can take more; `model`, the one that produced it, bounds the wait while it is going. */
  readonly write: (message: WireStreamInferResponse, model?: LlmModel) => Promise<void>;
  /** Set under `triton_grpc_error: true`: a failure ends the call rather than becoming an error_message. */
  readonly fail?: (error: unknown) => void;
}

function failCall(call: StreamCall, controller: AbortController, error: unknown): void {
  if (controller.signal.aborted) return;
  controller.abort(asConveyorError(error));
  if (!call.cancelled) call.emit('error', toGrpcStatusWithDetails(error));
}

const answer = (infer_response: WireInferResponse): WireStreamInferResponse => ({ error_message: '', infer_response });

async function runRequest(wire: WireInferRequest, context: RequestContext): Promise<void> {
  const { service, signal, write } = context;
  let lease: { release(): void } | undefined;
  // The model behind the request's stream, once it produced: a failure after that (the model
  // unloading, say) is an error_message whose write is bounded by the same model's closing.
  const streaming: { model?: LlmModel } = {};
  try {
    const request = inferRequestFromWire(wire);
    // Loaded (on demand) before its config says whether it streams, and kept while it does.
    lease = await service.acquire?.(request.model);
    if (isDecoupled(service, request.model, request.version)) {
      await streamDecoupled(request, context, streaming);
      return;
    }
    const response = await service.infer(request, signal);
    await write(answer(inferResponseToWire(response, { triton_final_response: true })));
  } catch (error) {
    if (context.fail) context.fail(error);
    else await write({ error_message: asConveyorError(error).message, infer_response: null }, streaming.model);
  } finally {
    lease?.release();
  }
}

async function streamDecoupled(request: InferRequest, context: RequestContext, streaming: { model?: LlmModel }): Promise<void> {
  // The hook first (an LLM's generation, with the model that bounds a client reading nothing); otherwise the model streams by itself (a TypeScript model's sender, an ensemble).
  const events: AsyncIterable<DecoupledEvent> | undefined = context.decoupled?.(request, context.signal) ?? context.service.inferStream?.(request, context.signal);
  if (!events) {
    throw new ConveyorError('UNSUPPORTED', `model '${request.model}' is decoupled and streaming generation over ModelStreamInfer is not available yet`);
  }
  // Triton stays silent on a flags-only final unless the request opts in to an empty response.
  const emptyFinal = request.parameters['triton_enable_empty_final_response'] === true;
  for await (const event of events) {
    // Leaving the loop calls the iterator's return(), so the producer can release its request.
    if (context.signal.aborted) return;
    if (event.model) streaming.model = event.model;
    const flags = { triton_final_response: event.final };
    if (event.response) {
      await context.write(answer(inferResponseToWire(event.response, flags)), event.model);
    } else if (event.final && emptyFinal) {
      const empty: InferResponse = { model: request.model, version: request.version ?? '', outputs: [], ...(request.id ? { id: request.id } : {}) };
      await context.write(answer(inferResponseToWire(empty, flags)), event.model);
    }
    if (event.final) return;
  }
}
