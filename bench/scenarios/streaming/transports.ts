// The four ways the streaming scenario asks the server for the same chat generations: OpenAI
// /v1/chat/completions without streaming (one JSON body per request, the baseline), the same
// route over SSE, the /v1/ws WebSocket protocol (every request of a run multiplexed on one
// socket) and conveyor.v1.GenerationService/Generate over gRPC. Each run sends every prompt at
// once and resolves when every request has finished, with what each one delivered.

import * as grpc from '@grpc/grpc-js';
import WebSocket from 'ws';
import { loadServiceDefinitions } from '../../../src/server/kit/grpc/index.js';
import { readSse } from '../serve/sse.js';

export type Transport = 'non-streaming' | 'sse' | 'websocket' | 'grpc';
export const TRANSPORTS: readonly Transport[] = ['non-streaming', 'sse', 'websocket', 'grpc'];

export interface GenerationParams {
  readonly model: string;
  /** Exactly this many tokens per request: greedy, ignore_eos. */
  readonly maxTokens: number;
}

export interface Delivered {
  /** Completion tokens, from the usage the transport reports. */
  readonly tokens: number;
  /** Messages (SSE chunks, WebSocket deltas, gRPC deltas) that carried output; 1 without streaming. */
  readonly messages: number;
  readonly text: string;
}

export interface TransportClient {
  readonly transport: Transport;
  /** One request per prompt, all in flight at once. */
  run(prompts: readonly string[], params: GenerationParams): Promise<Delivered[]>;
  close(): Promise<void>;
}

export interface Endpoints {
  /** http://host:port */
  readonly http: string;
  /** host:port */
  readonly grpcAddress: string;
}

export async function openClient(transport: Transport, endpoints: Endpoints): Promise<TransportClient> {
  switch (transport) {
    case 'non-streaming':
      return { transport, run: (prompts, params) => Promise.all(prompts.map((p) => chatOnce(endpoints.http, p, params))), close: async () => undefined };
    case 'sse':
      return { transport, run: (prompts, params) => Promise.all(prompts.map((p) => chatSse(endpoints.http, p, params))), close: async () => undefined };
    case 'websocket':
      return openWebSocket(endpoints.http);
    case 'grpc':
      return openGrpc(endpoints.grpcAddress);
  }
}

const sampling = (params: GenerationParams) => ({ max_tokens: params.maxTokens, temperature: 0, ignore_eos: true });

function chatBody(prompt: string, params: GenerationParams, stream: boolean): string {
  const body = { model: params.model, messages: [{ role: 'user', content: prompt }], ...sampling(params), stream };
  return JSON.stringify(stream ? { ...body, stream_options: { include_usage: true } } : body);
}

async function postChat(http: string, body: string): Promise<Response> {
  const response = await fetch(`${http}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  if (!response.ok) throw new Error(`POST /v1/chat/completions: HTTP ${response.status} ${await response.text()}`);
  return response;
}

async function chatOnce(http: string, prompt: string, params: GenerationParams): Promise<Delivered> {
  const response = await postChat(http, chatBody(prompt, params, false));
  const json = (await response.json()) as { choices: { message: { content: string | null } }[]; usage: { completion_tokens: number } };
  return { tokens: json.usage.completion_tokens, messages: 1, text: json.choices[0]?.message.content ?? '' };
}

async function chatSse(http: string, prompt: string, params: GenerationParams): Promise<Delivered> {
  const response = await postChat(http, chatBody(prompt, params, true));
  let text = '';
  let messages = 0;
  let tokens: number | undefined;
  let done = false;
  for await (const event of readSse(response.body!, () => 0)) {
    if (event.data === '[DONE]') {
      done = true;
      break;
    }
    const chunk = JSON.parse(event.data) as { choices: { delta: { content?: string } }[]; usage?: { completion_tokens: number } | null };
    if (chunk.choices.length > 0) {
      messages++;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
  }
  if (!done || tokens === undefined) throw new Error('SSE stream ended without a usage chunk and [DONE]');
  return { tokens, messages, text };
}

interface Pending {
  text: string;
  messages: number;
  tokenIds: number;
  resolve(delivered: Delivered): void;
  reject(error: Error): void;
}

async function openWebSocket(http: string): Promise<TransportClient> {
  const socket = new WebSocket(`${http.replace(/^http/, 'ws')}/v1/ws`);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const pending = new Map<string, Pending>();
  let closed: Error | undefined;
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { type: string; id?: string; text?: string; token_ids?: number[]; usage?: { completion_tokens: number }; error?: { message: string } };
    const entry = message.id === undefined ? undefined : pending.get(message.id);
    if (message.type === 'error' && !entry) {
      for (const p of pending.values()) p.reject(new Error(`WebSocket error: ${message.error?.message}`));
      pending.clear();
      return;
    }
    if (!entry) return;
    if (message.type === 'delta') {
      entry.text += message.text ?? '';
      entry.tokenIds += message.token_ids?.length ?? 0;
      entry.messages++;
    } else if (message.type === 'done' || message.type === 'error') {
      pending.delete(message.id!);
      if (message.type === 'error') entry.reject(new Error(`WebSocket ${message.id}: ${message.error?.message}`));
      else entry.resolve({ tokens: message.usage?.completion_tokens ?? entry.tokenIds, messages: entry.messages, text: entry.text });
    }
  });
  socket.on('close', () => {
    closed = new Error('WebSocket closed');
    for (const p of pending.values()) p.reject(closed);
    pending.clear();
  });
  let next = 0;
  return {
    transport: 'websocket',
    run: (prompts, params) =>
      Promise.all(
        prompts.map(
          (prompt) =>
            new Promise<Delivered>((resolve, reject) => {
              if (closed) return reject(closed);
              const id = `r${next++}`;
              pending.set(id, { text: '', messages: 0, tokenIds: 0, resolve, reject });
              socket.send(JSON.stringify({ type: 'generate', id, model: params.model, messages: [{ role: 'user', content: prompt }], ...sampling(params) }));
            }),
        ),
      ),
    close: async () => {
      if (socket.readyState === WebSocket.CLOSED) return;
      const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.close();
      await gone;
    },
  };
}

interface GenerateReply {
  readonly event?: 'delta' | 'final';
  readonly delta?: { text: string; token_ids: number[] };
  readonly final?: { usage?: { completion_tokens: number } };
}

type GenerationClient = grpc.Client & { Generate(request: object): grpc.ClientReadableStream<GenerateReply> };

async function openGrpc(address: string): Promise<TransportClient> {
  const Client = grpc.makeGenericClientConstructor(loadServiceDefinitions().generation, 'GenerationService');
  const client = new Client(address, grpc.credentials.createInsecure()) as unknown as GenerationClient;
  await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 10_000, (error) => (error ? reject(error) : resolve())));
  const generate = (prompt: string, params: GenerationParams): Promise<Delivered> =>
    new Promise((resolve, reject) => {
      let text = '';
      let messages = 0;
      let tokens: number | undefined;
      const call = client.Generate({ model: params.model, chat: { messages: [{ role: 'user', content: prompt }] }, sampling: sampling(params) });
      call.on('data', (reply: GenerateReply) => {
        if (reply.event === 'delta' && reply.delta) {
          text += reply.delta.text;
          messages++;
        } else if (reply.event === 'final') tokens = reply.final?.usage?.completion_tokens;
      });
      call.on('error', (error: grpc.ServiceError) => reject(new Error(`Generate: ${grpc.status[error.code]} ${error.details}`)));
      call.on('end', () => (tokens === undefined ? reject(new Error('Generate ended without a final message')) : resolve({ tokens, messages, text })));
    });
  return {
    transport: 'grpc',
    run: (prompts, params) => Promise.all(prompts.map((p) => generate(p, params))),
    close: async () => client.close(),
  };
}
