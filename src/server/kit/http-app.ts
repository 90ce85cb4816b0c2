// The HTTP port every HTTP front end registers on, as a bare fastify app: request logging (probes
// at debug level), the body limit, X-Request-Id as the request id, connection timeouts and caps
// (with the probe reserve past them), the access policy (guarding routes registered later too),
// model leases, and the plain `{"error"}` answer for anything outside a front end's own plugin (a
// refused /v1/ws upgrade, an unknown path). The front ends' routes are the composition root's to
// register (src/main.ts).

import Fastify from 'fastify';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { DEFAULT_LIMITS } from '../../config/limits.js';
import { AccessPolicy } from '../../security/access-policy.js';
import { installAccessControl } from './access.js';
import { connectionServerOptions, installConnectionLimits, type ConnectionLimits } from './connection-limits.js';
import { sendFailure } from './errors.js';
import { installModelLeases, type ModelLeases } from './model-leases.js';
import { installReadableRefusals, type LingerLimits } from './readable-refusals.js';
import { ProbeQuietLogController } from './probe-logging.js';

/** Image batches as binary tensors are large; Triton itself has no fixed limit. */
export const DEFAULT_BODY_LIMIT = 256 * 1024 * 1024;

export interface HttpServerOptions {
  /** fastify's `logger` option. */
  logger?: boolean | object;
  /** Largest request body in bytes, after decompression. */
  bodyLimit?: number;
  /** Who may call which route, including routes registered on the app later; default: everyone. */
  access?: AccessPolicy;
  /** Header, request and idle timeouts and the connection caps; Node's and fastify's defaults when absent. */
  connections?: ConnectionLimits;
  /** Leases on the model each request runs (loads on demand, idle unload); absent, none are taken. */
  modelLeases?: ModelLeases;
  /** How much of a refused body is read, and for how long, before its connection closes (default: the limits table's). */
  linger?: LingerLimits;
}

export function createHttpServer(options: HttpServerOptions = {}): FastifyInstance {
  const app = Fastify({
    logger: (options.logger ?? false) as FastifyServerOptions['logger'],
    logController: new ProbeQuietLogController(),
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    // A client's X-Request-Id becomes the request id in every log line about the request.
    requestIdHeader: 'x-request-id',
    ...(options.connections ? connectionServerOptions(options.connections) : {}),
  });
  // First of the hooks: a connection past the caps may only ask for a probe.
  if (options.connections) installConnectionLimits(app, options.connections);
  // Refusals the client can read: 100-continue decided by the body limit, a lingering close.
  installReadableRefusals(app, options.linger ?? DEFAULT_LIMITS);
  installAccessControl(app, options.access ?? AccessPolicy.open());
  if (options.modelLeases) installModelLeases(app, options.modelLeases);
  // Errors outside the front ends' own plugins (a refused /v1/ws upgrade) in Triton's shape too.
  app.setErrorHandler((error, request, reply) => sendFailure(error, request, reply));
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ error: `no route for ${request.method} ${request.url}` }));
  return app;
}
