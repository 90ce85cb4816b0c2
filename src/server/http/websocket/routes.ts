// GET /v1/ws: the WebSocket streaming front end (protocol in PROTOCOL.md). Registered as its own
// plugin so @fastify/websocket's upgrade handling and limits stay with this route.

import fastifyWebsocket from '@fastify/websocket';
import type { FastifyPluginAsync } from 'fastify';
import type { LlmLookup } from '../../generation/lookup.js';
import { WebSocketSession, type SessionLimits } from './session.js';

export const WEBSOCKET_PATH = '/v1/ws';

export interface WebSocketOptions extends Partial<SessionLimits> {
  /** Largest client frame in bytes. */
  readonly maxPayloadBytes?: number;
}

const DEFAULTS = { maxGenerations: 256, highWaterBytes: 1024 * 1024, maxPayloadBytes: 16 * 1024 * 1024 };

export function websocketRoutes(lookup: LlmLookup, options: WebSocketOptions = {}): FastifyPluginAsync {
  const limits: SessionLimits = {
    maxGenerations: options.maxGenerations ?? DEFAULTS.maxGenerations,
    highWaterBytes: options.highWaterBytes ?? DEFAULTS.highWaterBytes,
  };
  return async (app) => {
    await app.register(fastifyWebsocket, { options: { maxPayload: options.maxPayloadBytes ?? DEFAULTS.maxPayloadBytes } });
    app.get(WEBSOCKET_PATH, { websocket: true }, (socket) => {
      new WebSocketSession(socket, lookup, limits);
    });
  };
}
