// GRPCInferenceService handlers: each RPC translates its message, calls the InferenceService and
// translates the answer back. Any thrown error becomes the catalog's gRPC status.

import type { ServerUnaryCall, UntypedServiceImplementation, sendUnaryData } from '@grpc/grpc-js';
import type { InferenceService } from '../../contracts/inference-service.js';
import { ConveyorError } from '../../errors.js';
import { inferRequestFromWire, inferResponseToWire, parametersToWire } from './infer-codec.js';
import { loadOverrideFromWire, unloadOptionsFromWire } from './repository-codec.js';
import { cancelledError, toGrpcStatus, unsupported } from '../kit/grpc/status.js';
import { createRuntimeSettings, type RuntimeSettings } from '../../config/runtime-settings.js';
import { logSettingsRpc, traceSettingRpc, type WireLogSettingsRequest, type WireTraceSettingRequest } from './settings-handlers.js';
import { handleModelStreamInfer, isDecoupled, type DecoupledInfer } from './stream-infer.js';
import type { WireInferRequest, WireInferResponse, WireModelRef, WireRepositoryIndexRequest, WireRepositoryModelRequest } from './wire-types.js';

type Handler<Req, Res> = (request: Req, call: ServerUnaryCall<Req, Res>) => Res | Promise<Res>;

/** A unary handler whose result or thrown error (sync or async) becomes the RPC's answer. */
function unary<Req, Res>(handler: Handler<Req, Res>): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
  return (call, callback) => {
    Promise.resolve()
      .then(() => handler(call.request, call))
      .then(
        (response) => callback(null, response),
        (error: unknown) => callback(toGrpcStatus(error)),
      );
  };
}

/** Empty strings on the wire mean "not given". */
const optional = (value: string): string | undefined => (value === '' ? undefined : value);

const UNIMPLEMENTED_RPCS = [
  'SystemSharedMemoryStatus',
  'SystemSharedMemoryRegister',
  'SystemSharedMemoryUnregister',
  'CudaSharedMemoryStatus',
  'CudaSharedMemoryRegister',
  'CudaSharedMemoryUnregister',
] as const;

export function inferenceHandlers(service: InferenceService, decoupled?: DecoupledInfer, settings?: RuntimeSettings): UntypedServiceImplementation {
  const { log, trace } = settings ?? createRuntimeSettings();
  const handlers: UntypedServiceImplementation = {
    ServerLive: unary(() => ({ live: service.isLive() })),
    ServerReady: unary(() => ({ ready: service.isReady() })),
    ModelReady: unary((r: WireModelRef) => ({ ready: service.modelReady(r.name, optional(r.version)) })),
    ServerMetadata: unary(() => service.serverMetadata()),
    ModelMetadata: unary((r: WireModelRef) => {
      const metadata = service.modelMetadata(r.name, optional(r.version));
      return { ...metadata, parameters: parametersToWire({ ...metadata.parameters }) };
    }),
    ModelInfer: unary((r: WireInferRequest, call) => modelInfer(service, r, call)),
    ModelStreamInfer: handleModelStreamInfer(service, decoupled),
    // The contract's ModelConfig already uses the proto's field names and enum names.
    ModelConfig: unary((r: WireModelRef) => ({ config: service.modelConfig(r.name, optional(r.version)) })),
    ModelStatistics: unary((r: WireModelRef) => ({ model_stats: service.modelStatistics(optional(r.name), optional(r.version)) })),
    RepositoryIndex: unary(async (r: WireRepositoryIndexRequest) => ({ models: await service.repositoryIndex(r.ready) })),
    RepositoryModelLoad: unary(async (r: WireRepositoryModelRequest) => {
      await service.loadModel(r.model_name, loadOverrideFromWire(r.parameters));
      return {};
    }),
    RepositoryModelUnload: unary(async (r: WireRepositoryModelRequest) => {
      await service.unloadModel(r.model_name, unloadOptionsFromWire(r.parameters));
      return {};
    }),
    LogSettings: unary((r: WireLogSettingsRequest) => logSettingsRpc(log, r)),
    TraceSetting: unary((r: WireTraceSettingRequest) => traceSettingRpc(trace, service, r)),
  };
  for (const rpc of UNIMPLEMENTED_RPCS) {
    handlers[rpc] = unary(() => {
      throw unsupported(rpc);
    });
  }
  return handlers;
}

async function modelInfer(service: InferenceService, wire: WireInferRequest, call: ServerUnaryCall<WireInferRequest, WireInferResponse>): Promise<WireInferResponse> {
  const request = inferRequestFromWire(wire);
  // Decoupled models answer 0..N times per request, which a unary RPC cannot carry (Triton too).
  if (isDecoupled(service, request.model, request.version)) {
    throw new ConveyorError('UNSUPPORTED', `ModelInfer does not support model '${request.model}', which has a decoupled transaction policy; use ModelStreamInfer`);
  }
  const controller = new AbortController();
  const onCancel = () => controller.abort(cancelledError());
  call.once('cancelled', onCancel);
  try {
    return inferResponseToWire(await service.infer(request, controller.signal));
  } finally {
    call.removeListener('cancelled', onCancel);
  }
}
