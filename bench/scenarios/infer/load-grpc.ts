// gRPC load: a client built at run time from protos/ (as a generated Triton stub would be), N
// closed loops of unary ModelInfer calls over one channel, inputs in raw_input_contents. Stopping
// cancels what is still outstanding so the server can drop queued work before the next window.

import * as grpc from '@grpc/grpc-js';
import { loadServiceDefinitions } from '../../../src/server/kit/grpc/index.js';
import type { ModelMetadata } from './payloads.js';
import type { LoadDriver } from './window.js';

interface InferReply {
  readonly outputs?: readonly { name: string; shape: readonly string[] }[];
  readonly raw_output_contents?: readonly Buffer[];
}

type Callback = (error: grpc.ServiceError | null, reply?: InferReply) => void;

export interface InferClient {
  ModelInfer(request: object, callback: Callback): grpc.ClientUnaryCall;
  close(): void;
}

export function grpcClient(address: string): InferClient {
  const Client = grpc.makeGenericClientConstructor(loadServiceDefinitions().inference, 'GRPCInferenceService');
  // tritonclient's limits: Triton accepts messages up to INT32_MAX.
  const options = { 'grpc.max_send_message_length': -1, 'grpc.max_receive_message_length': -1 };
  return new Client(address, grpc.credentials.createInsecure(), options) as unknown as InferClient;
}

export function inferOnce(client: InferClient, request: object): Promise<InferReply> {
  return new Promise((resolve, reject) => {
    client.ModelInfer(request, (error, reply) => (error ? reject(error) : resolve(reply ?? {})));
  });
}

/** Output names and shapes of a reply; throws unless every output came back in raw_output_contents. */
export function checkGrpcReply(reply: InferReply, metadata: ModelMetadata): string {
  const outputs = reply.outputs ?? [];
  if ((reply.raw_output_contents ?? []).length !== outputs.length) throw new Error(`${metadata.name}: gRPC outputs not all in raw_output_contents`);
  for (const expected of metadata.outputs) {
    if (!outputs.some((o) => o.name === expected.name)) throw new Error(`${metadata.name}: output ${expected.name} missing from the gRPC reply`);
  }
  return outputs.map((o) => `${o.name} [${o.shape.join(', ')}]`).join(', ');
}

export function grpcDriver(client: InferClient, request: object): LoadDriver {
  return (concurrency, onResponse) => {
    let stopped = false;
    const outstanding = new Set<grpc.ClientUnaryCall>();
    const loop = async (): Promise<void> => {
      while (!stopped) {
        await new Promise<void>((resolve) => {
          const started = performance.now();
          const call = client.ModelInfer(request, (error) => {
            outstanding.delete(call);
            if (!stopped) onResponse(performance.now() - started, error ? `${grpc.status[error.code]}: ${error.details}` : undefined);
            resolve();
          });
          outstanding.add(call);
        });
      }
    };
    const loops = Array.from({ length: concurrency }, loop);
    return {
      stop: async () => {
        stopped = true;
        for (const call of outstanding) call.cancel();
        await Promise.all(loops);
      },
    };
  };
}
