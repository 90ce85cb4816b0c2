// GET /v1/ws: the WebSocket streaming front end (protocol in PROTOCOL.md). Registered as its own
// plugin so @fastify/websocket's upgrade handling and limits stay with this route.

import fastifyWebsocket from '@fastify/websocket';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { LlmLookup } from '../../generation/lookup.js';
import { WebSocketSession, type SessionLimits } from './session.js';

export const WEBSOCKET_PATH = '/v1/ws';

export interface WebSocketOptions extends Partial<SessionLimits> {
  /** Largest client frame in bytes. */
  readonly maxPayloadBytes?: number;
  /** Runs before the upgrade; a throw refuses it with the error's HTTP status (e.g. the API-key check). */
  readonly authorize?: ((request: FastifyRequest) => Promise<void>) | null;
}

const DEFAULTS = { maxGenerations: 256, highWaterBytes: 1024 * 1024, maxPayloadBytes: 16 * 1024 * 1024 };

export function websocketRoutes(lookup: LlmLookup, options: WebSocketOptions = {}): FastifyPluginAsync {
  const limits: SessionLimits = {
    maxGenerations: options.maxGenerations ?? DEFAULTS.maxGenerations,
    highWaterBytes: options.highWaterBytes ?? DEFAULTS.highWaterBytes,
  };
  return async (app) => {
    await app.register(fastifyWebsocket, { options: { maxPayload: options.maxPayloadBytes ?? DEFAULTS.maxPayloadBytes } });
    if (options.authorize) app.addHook('onRequest', options.authorize);
    app.get(WEBSOCKET_PATH, { websocket: true }, (socket) => {
      new WebSocketSession(socket, lookup, limits);
    });
  };
}
