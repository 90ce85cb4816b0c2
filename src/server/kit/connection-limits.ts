// The HTTP listener's defences against clients that hold sockets without finishing requests:
// header, whole-request and keep-alive idle timeouts, and a cap on open connections, so trickled
// bodies and idle sockets cannot exhaust file descriptors. Node enforces all of them; this module
// only translates the limits table into its settings.

import type { Server, ServerOptions } from 'node:http';
import type { FastifyServerOptions } from 'fastify';
import type { ResourceLimits } from '../../config/limits.js';

export type ConnectionLimits = Pick<ResourceLimits, 'httpHeaderTimeoutSecs' | 'httpRequestTimeoutSecs' | 'httpIdleTimeoutSecs' | 'httpMaxConnections'>;

/**
 * Node checks the header and request timeouts on a timer (30 s by default), so a timeout is only
 * enforced to within that interval; a quarter of the shorter timeout keeps the overshoot small.
 */
export function checkingIntervalMs(limits: ConnectionLimits): number {
  const shorter = Math.min(limits.httpHeaderTimeoutSecs, limits.httpRequestTimeoutSecs) * 1000;
  return Math.round(Math.min(30_000, Math.max(50, shorter / 4)));
}

/** The fastify options that carry the timeouts into http.createServer. */
export function connectionServerOptions(limits: ConnectionLimits): Pick<FastifyServerOptions, 'requestTimeout' | 'keepAliveTimeout'> & { http: ServerOptions } {
  return {
    requestTimeout: limits.httpRequestTimeoutSecs * 1000,
    keepAliveTimeout: limits.httpIdleTimeoutSecs * 1000,
    http: { headersTimeout: limits.httpHeaderTimeoutSecs * 1000, connectionsCheckingInterval: checkingIntervalMs(limits) },
  };
}

/**
 * Past the cap Node destroys each new socket as it is accepted (no HTTP answer is possible before
 * a request is read); established connections, health probes on them included, are unaffected.
 */
export function applyConnectionCap(server: Server, limits: ConnectionLimits, onDrop?: () => void): void {
  if (limits.httpMaxConnections > 0) server.maxConnections = limits.httpMaxConnections;
  if (onDrop) server.on('drop', onDrop);
}
