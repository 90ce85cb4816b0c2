// API keys and CORS for the OpenAI routes. Keys: `Authorization: Bearer <key>` against the
// --api-key values, compared in constant time over their digests (so neither the content nor
// the length of a key leaks through timing). CORS: nothing at all unless --cors-allow-origin
// names origins; then allowed origins get the headers, and preflights are answered here.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConveyorError } from '../src/errors.js';

const digest = (key: string): Buffer => createHash('sha256').update(key).digest();

/** An onRequest hook that refuses requests without one of `keys`; none: every request passes. */
export function apiKeyHook(keys: readonly string[]): ((request: FastifyRequest) => Promise<void>) | null {
  if (keys.length === 0) return null;
  const digests = keys.map(digest);
  return async (request) => {
    // Preflights never carry credentials; the CORS hook answers them.
    if (request.method === 'OPTIONS') return;
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) {
      throw new ConveyorError('UNAUTHENTICATED', "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.");
    }
    const given = digest(match[1]!);
    // Every key is compared, so the time does not depend on which one matched.
    let ok = false;
    for (const d of digests) ok = timingSafeEqual(given, d) || ok;
    if (!ok) throw new ConveyorError('UNAUTHENTICATED', 'Incorrect API key provided.');
  };
}

const EXPOSED = 'x-request-id, retry-after';
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
