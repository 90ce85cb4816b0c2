// Every HTTP request that runs a model holds a lease on it (src/serving/model-residency.ts) from
// before its handler until its response closes: that is what loads a model on its first request,
// keeps a busy model from eviction and idle unload, and restarts its keep_alive when it is done.
// A root preHandler, so it covers the KServe, OpenAI and Anthropic routes alike; a refusal
// (load timeout, no room, a sleeping model) is answered by the route's own error handler.

import type { FastifyInstance } from 'fastify';
import type { ModelLease } from '../../serving/model-residency.js';
import { parseKeepAlive, type KeepAliveMs } from '../../serving/residency-policy.js';

export interface ModelLeases {
  acquire(name: string, requestKeepAliveMs?: KeepAliveMs): Promise<ModelLease>;
}

/** Routes whose JSON body names the model in `model` (OpenAI, Anthropic, vLLM's tokenizer). */
const BODY_MODEL_ROUTES = new Set(['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses', '/v1/messages', '/tokenize', '/detokenize']);
/** KServe routes that run the model in their path. */
const PATH_MODEL_ROUTE = /\/(infer|generate|generate_stream)$/;

export interface LeaseTarget {
  readonly model: string;
  /** The request's `keep_alive` as sent (Ollama's field), unchecked. */
  readonly keepAlive?: unknown;
}

/** Which model a request runs, from its route pattern, path parameters and parsed body; undefined for routes that run none. */
export function leaseTarget(routeUrl: string | undefined, params: unknown, body: unknown): LeaseTarget | undefined {
  if (routeUrl === undefined) return undefined;
  if (PATH_MODEL_ROUTE.test(routeUrl) && routeUrl.includes(':model')) {
    const model = (params as { model?: unknown } | null)?.model;
    return typeof model === 'string' ? { model } : undefined;
  }
  if (!BODY_MODEL_ROUTES.has(routeUrl) || typeof body !== 'object' || body === null || Buffer.isBuffer(body)) return undefined;
  const { model, keep_alive: keepAlive } = body as { model?: unknown; keep_alive?: unknown };
  if (typeof model !== 'string' || model === '') return undefined;
  return keepAlive === undefined || keepAlive === null ? { model } : { model, keepAlive };
}

/** Call on a fresh app, before the front ends register: fastify adds a root hook only to plugins registered after it. */
export function installModelLeases(app: FastifyInstance, leases: ModelLeases): void {
  app.addHook('preHandler', async (request, reply) => {
    const target = leaseTarget(request.routeOptions.url, request.params, request.body);
    if (!target) return;
    const keepAlive = target.keepAlive === undefined ? undefined : parseKeepAlive(target.keepAlive, 'keep_alive');
    const lease = await leases.acquire(target.model, keepAlive);
    if (reply.raw.destroyed || reply.raw.writableFinished) lease.release();
    else reply.raw.once('close', () => lease.release());
  });
}
