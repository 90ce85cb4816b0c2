// GET /v1/ws: the WebSocket streaming front end (protocol in PROTOCOL.md). Registered as its own
// plugin so @fastify/websocket's upgrade handling and limits stay with this route.

import fastifyWebsocket from '@fastify/websocket';
import type { FastifyPluginAsync } from 'fastify';
import type { LlmLookup } from '../generation/lookup.js';
import { DEFAULT_LIMITS, type ResourceLimits } from '../../config/limits.js';
import { WebSocketSession, type SessionLimits } from './session.js';
import type { OffThreadParser } from '../kit/offthread-parse.js';

export const WEBSOCKET_PATH = '/v1/ws';

export interface WebSocketOptions extends Partial<SessionLimits> {
  /** Largest client frame in bytes. */
  readonly maxPayloadBytes?: number;
}

/** Above this many unflushed bytes a socket's generations pause (and its frames go unread). */
const HIGH_WATER_BYTES = 1024 * 1024;

/** The WebSocket options the limits table sets. */
export function websocketLimits(limits: ResourceLimits): WebSocketOptions {
  return {
    maxPayloadBytes: limits.wsMaxMessageBytes,
    maxGenerations: limits.wsMaxGenerations,
    maxBufferedBytes: limits.wsMaxBufferedBytes,
    stallTimeoutMs: limits.wsSendTimeoutSecs * 1000,
    jsonMaxDepth: limits.jsonMaxDepth,
    maxInvalidMessages: limits.wsMaxInvalidMessages,
  };
}

/** `offThread` reads frames past its threshold on a parse worker; absent, every frame is read in place. */
export function websocketRoutes(lookup: LlmLookup, options: WebSocketOptions = {}, offThread?: OffThreadParser): FastifyPluginAsync {
  const maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_LIMITS.wsMaxBufferedBytes;
  const limits: SessionLimits = {
    maxGenerations: options.maxGenerations ?? DEFAULT_LIMITS.wsMaxGenerations,
    // The mark must sit below the hard cap, or a client would be dropped before it is paused.
    highWaterBytes: options.highWaterBytes ?? Math.min(HIGH_WATER_BYTES, Math.floor(maxBufferedBytes / 4)),
    maxBufferedBytes,
    stallTimeoutMs: options.stallTimeoutMs ?? DEFAULT_LIMITS.wsSendTimeoutSecs * 1000,
    jsonMaxDepth: options.jsonMaxDepth ?? DEFAULT_LIMITS.jsonMaxDepth,
    maxInvalidMessages: options.maxInvalidMessages ?? DEFAULT_LIMITS.wsMaxInvalidMessages,
  };
  return async (app) => {
    // allowSynchronousEvents false: one client message per event-loop turn per socket, and the
    // socket is not read while its messages wait. With it on, ws emitted every frame of a read
    // at once: a client writing 50,000 small frames held the serving thread for half a second.
    const wsOptions = { maxPayload: options.maxPayloadBytes ?? DEFAULT_LIMITS.wsMaxMessageBytes, allowSynchronousEvents: false };
    await app.register(fastifyWebsocket, { options: wsOptions });
    app.get(WEBSOCKET_PATH, { websocket: true }, (socket, request) => {
      new WebSocketSession(socket, lookup, limits, offThread, request.raw.socket);
    });
  };
}
