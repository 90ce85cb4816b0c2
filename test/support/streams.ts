// Raw streaming clients for drain tests: an SSE POST on its own connection read frame by frame,
// a /v1/ws socket collecting messages, and gRPC clients built from protos/ at run time.
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import WebSocket from 'ws';

/** Resolves once `check` is true, re-checked whenever `wake` is called. */
class Waiters {
  private readonly pending: { check: () => boolean; resolve: () => void }[] = [];

  until(check: () => boolean): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve) => this.pending.push({ check, resolve }));
  }

  wake(): void {
    for (const waiter of [...this.pending]) {
      if (!waiter.check()) continue;
      this.pending.splice(this.pending.indexOf(waiter), 1);
      waiter.resolve();
    }
  }
}

export interface SseStream {
  readonly status: number;
  readonly headers: Record<string, unknown>;
  /** Every `data:` payload so far, as sent (JSON text or `[DONE]`). */
  readonly frames: string[];
  /** Resolves once at least `count` frames arrived (or the body ended). */
  framesAtLeast(count: number): Promise<void>;
  /** Resolves with every frame once the body ended. */
  readonly ended: Promise<string[]>;
  /** Drops the connection, as a client that goes away does. */
  disconnect(): void;
}

/** A streaming POST over a connection of its own, so the server's drain sees exactly one socket. */
export function postSse(url: string, body: object): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (response) => {
      response.setEncoding('utf8');
      const frames: string[] = [];
      const waiters = new Waiters();
      let buffered = '';
      let done = false;
      const ended = new Promise<string[]>((resolveEnd) => {
        const finish = (): void => {
          done = true;
          waiters.wake();
          resolveEnd(frames);
        };
        response.on('end', finish);
        response.on('error', finish);
      });
      response.on('data', (chunk: string) => {
        buffered += chunk;
        let end: number;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          const frame = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          if (frame.startsWith('data: ')) frames.push(frame.slice(6));
        }
        waiters.wake();
      });
      resolve({
        status: response.statusCode!,
        headers: response.headers,
        frames,
        ended,
        framesAtLeast: (count) => waiters.until(() => done || frames.length >= count),
        disconnect: () => request.destroy(),
      });
    });
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
}

export interface WsClient {
  readonly socket: WebSocket;
  readonly messages: Record<string, unknown>[];
  send(message: object): void;
  /** Resolves with the first message (received or to come) that `match` accepts. */
  next(match: (message: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  readonly closed: Promise<void>;
}

export async function openWebSocket(httpPort: number): Promise<WsClient> {
  const socket = new WebSocket(`ws://127.0.0.1:${httpPort}/v1/ws`);
  const messages: Record<string, unknown>[] = [];
  const waiters = new Waiters();
  socket.on('message', (data) => {
    messages.push(JSON.parse(data.toString()) as Record<string, unknown>);
    waiters.wake();
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return {
    socket,
    messages,
    closed,
    send: (message) => socket.send(JSON.stringify(message)),
    next: async (match) => {
      await waiters.until(() => messages.some(match));
      return messages.find(match)!;
    },
  };
}

type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;
export type GrpcReply = Record<string, unknown>;

export interface GrpcClients {
  readonly inference: Client;
  readonly generation: Client;
  readonly health: Client;
  close(): void;
}

const PROTOS = join(import.meta.dirname, '..', '..', 'protos');

export function grpcClients(address: string): GrpcClients {
  const definition = loadSync(['generate.proto', 'grpc_service.proto', 'health.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTOS] });
  const root = grpc.loadPackageDefinition(definition) as unknown as {
    conveyor: { v1: { GenerationService: new (...a: unknown[]) => Client } };
    inference: { GRPCInferenceService: new (...a: unknown[]) => Client };
    grpc: { health: { v1: { Health: new (...a: unknown[]) => Client } } };
  };
  const credentials = grpc.credentials.createInsecure();
  const clients = {
    inference: new root.inference.GRPCInferenceService(address, credentials),
    generation: new root.conveyor.v1.GenerationService(address, credentials),
    health: new root.grpc.health.v1.Health(address, credentials),
  };
  return { ...clients, close: () => Object.values(clients).forEach((c) => c.close()) };
}

/** A unary call's answer or its error. */
export function unaryCall(client: Client, rpc: string, request: object): Promise<{ reply?: GrpcReply; error?: grpc.ServiceError }> {
  return new Promise((resolve) => {
    client[rpc]!(request, (error: grpc.ServiceError | null, reply: GrpcReply) => resolve(error ? { error } : { reply }));
  });
}

export interface GenerateStream {
  readonly messages: GrpcReply[];
  /** Resolves once the first message arrived (or the call ended). */
  readonly first: Promise<void>;
  /** The call's end: its error status, if any. */
  readonly ended: Promise<grpc.ServiceError | undefined>;
}

export function generateStream(clients: GrpcClients, request: object): GenerateStream {
  const messages: GrpcReply[] = [];
  let markFirst: () => void = () => {};
  const first = new Promise<void>((resolve) => (markFirst = resolve));
  const call = clients.generation['Generate']!(request) as grpc.ClientReadableStream<GrpcReply>;
  call.on('data', (m: GrpcReply) => {
    messages.push(m);
    markFirst();
  });
  const ended = new Promise<grpc.ServiceError | undefined>((resolve) => {
    call.on('error', (error: grpc.ServiceError) => {
      markFirst();
      resolve(error);
    });
    call.on('end', () => {
      markFirst();
      resolve(undefined);
    });
  });
  return { messages, first, ended };
}
