// CORS for the OpenAI routes: nothing at all unless --cors-allow-origin names origins; then
// allowed origins get the headers, and preflights are answered here (before the API-key check of
// src/server/kit/access.ts, which runs at preParsing, so refusals carry the headers too).

import type { FastifyReply, FastifyRequest } from 'fastify';

const EXPOSED = 'x-request-id, retry-after, retry-after-ms';
const METHODS = 'GET, POST, OPTIONS';

/** An onRequest hook adding CORS headers for allowed origins and answering preflights; null when CORS is off. */
export function corsHook(origins: readonly string[]): ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) | null {
  if (origins.length === 0) return null;
  const any = origins.includes('*');
  return async (request, reply) => {
    const origin = request.headers.origin;
    if (typeof origin !== 'string' || !(any || origins.includes(origin))) return;
    reply.header('access-control-allow-origin', any ? '*' : origin);
    if (!any) reply.header('vary', 'origin');
    reply.header('access-control-expose-headers', EXPOSED);
    if (request.method !== 'OPTIONS' || request.headers['access-control-request-method'] === undefined) return;
    const requested = request.headers['access-control-request-headers'];
    reply
      .header('access-control-allow-methods', METHODS)
      .header('access-control-allow-headers', typeof requested === 'string' ? requested : 'authorization, content-type')
      .header('access-control-max-age', '600')
      .code(204)
      .send();
  };
}
