// Access control for every gRPC call (GRPCInferenceService, conveyor.v1.GenerationService and
// grpc.health.v1): one server interceptor checks the `authorization: Bearer <key>` metadata
// against the policy (src/security/access-policy.ts) before any handler runs, and answers a
// refusal with UNAUTHENTICATED or PERMISSION_DENIED. The table below is the port's, whichever
// front end serves the RPC: the kit's, since the server (and so the interceptor) is one.

import { ResponderBuilder, ServerInterceptingCall, ServerListenerBuilder, type Metadata, type ServerInterceptor } from '@grpc/grpc-js';
import { asConveyorError } from '../../../errors.js';
import type { AccessClass, AccessPolicy } from '../../../security/access-policy.js';

const INFERENCE = '/inference.GRPCInferenceService/';
const HEALTH = '/grpc.health.v1.Health/';

/** The RPCs that are not 'api', by method path; an RPC missing here (or added later) is 'api'. */
export const RPC_ACCESS: Readonly<Record<string, AccessClass>> = {
  [`${HEALTH}Check`]: 'health',
  [`${HEALTH}Watch`]: 'health',
  [`${INFERENCE}ServerLive`]: 'health',
  [`${INFERENCE}ServerReady`]: 'health',
  [`${INFERENCE}ModelReady`]: 'health',
  [`${INFERENCE}RepositoryModelLoad`]: 'control',
  [`${INFERENCE}RepositoryModelUnload`]: 'control',
  // Unimplemented today; they change server state, so they are control when they arrive.
  [`${INFERENCE}SystemSharedMemoryRegister`]: 'control',
  [`${INFERENCE}SystemSharedMemoryUnregister`]: 'control',
  [`${INFERENCE}CudaSharedMemoryRegister`]: 'control',
  [`${INFERENCE}CudaSharedMemoryUnregister`]: 'control',
  [`${INFERENCE}TraceSetting`]: 'control',
  [`${INFERENCE}LogSettings`]: 'control',
};

export const rpcAccess = (path: string): AccessClass => RPC_ACCESS[path] ?? 'api';

function authorizationOf(metadata: Metadata): string | undefined {
  const value = metadata.get('authorization')[0];
  return typeof value === 'string' ? value : undefined;
}

export function accessInterceptor(policy: AccessPolicy): ServerInterceptor {
  return (method, call) => {
    const access = rpcAccess(method.path);
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        try {
          policy.check(access, authorizationOf(metadata));
        } catch (error) {
          // Not passing the metadata on means the handler never starts.
          const refusal = asConveyorError(error);
          call.sendStatus({ code: refusal.grpcStatus, details: refusal.message });
          return;
        }
        next(metadata);
      })
      .build();
    return new ServerInterceptingCall(call, new ResponderBuilder().withStart((next) => next(listener)).build());
  };
}
