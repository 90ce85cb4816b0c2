// grpc.health.v1.Health for load balancers and Kubernetes gRPC probes. "" (or the inference
// service's own name) asks about the server: SERVING once it is ready. A model name asks about
// that model: SERVING while it is loaded and ready. Watch re-checks on a timer because the
// InferenceService contract has no readiness events.

import { status, type ServerUnaryCall, type ServerWritableStream, type sendUnaryData } from '@grpc/grpc-js';
import type { InferenceService } from '../../../contracts/inference-service.js';
import { toGrpcStatus } from './status.js';
import type { WireHealthCheckRequest, WireHealthCheckResponse, WireServingStatus } from './wire-types.js';

const SERVER_NAMES: ReadonlySet<string> = new Set(['', 'inference.GRPCInferenceService']);

/** The status for a service name, or undefined when the name is neither the server nor a model. */
export async function servingStatus(service: InferenceService, name: string): Promise<WireServingStatus | undefined> {
  if (SERVER_NAMES.has(name)) return service.isReady() ? 'SERVING' : 'NOT_SERVING';
  try {
    if (service.modelReady(name)) return 'SERVING';
  } catch {
    // Unknown models may throw; the repository index below decides.
  }
  const index = await service.repositoryIndex(false);
  return index.some((entry) => entry.name === name) ? 'NOT_SERVING' : undefined;
}

export interface HealthService {
  readonly implementation: {
    Check(call: ServerUnaryCall<WireHealthCheckRequest, WireHealthCheckResponse>, callback: sendUnaryData<WireHealthCheckResponse>): void;
    Watch(call: ServerWritableStream<WireHealthCheckRequest, WireHealthCheckResponse>): void;
  };
  /** Ends every Watch stream, so server shutdown does not wait on them. */
  close(): void;
}

export function createHealthService(service: InferenceService, watchIntervalMs: number): HealthService {
  const watchers = new Set<() => void>();
  return {
    implementation: {
      Check(call, callback) {
        servingStatus(service, call.request.service).then(
          (current) => {
            if (current === undefined) callback({ code: status.NOT_FOUND, details: `unknown service '${call.request.service}'` });
            else callback(null, { status: current });
          },
          (error: unknown) => callback(toGrpcStatus(error)),
        );
      },
      Watch(call) {
        watchers.add(watch(service, call, watchIntervalMs, watchers));
      },
    },
    close() {
      for (const stop of [...watchers]) stop();
    },
  };
}

function watch(service: InferenceService, call: ServerWritableStream<WireHealthCheckRequest, WireHealthCheckResponse>, intervalMs: number, watchers: Set<() => void>): () => void {
  let last: WireServingStatus | undefined;
  let stopped = false;
  const poll = async () => {
    const current = await servingStatus(service, call.request.service).then(
      (s) => s ?? 'SERVICE_UNKNOWN',
      () => 'UNKNOWN' as const,
    );
    if (stopped || current === last) return;
    last = current;
    call.write({ status: current });
  };
  const timer = setInterval(() => void poll(), intervalMs);
  timer.unref();
  const stop = () => {
    stopped = true;
    clearInterval(timer);
    if (watchers.delete(stop) && !call.cancelled) call.end();
  };
  call.on('cancelled', stop);
  void poll();
  return stop;
}
