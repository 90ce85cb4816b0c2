// Access control for every HTTP route on the port: KServe, Triton's generate extension, the
// OpenAI routes, /tokenize and the /v1/ws upgrade. Routes carry their class in their fastify
// config (`withAccess('health')`); a route without one is 'api', so a route added later is
// guarded by default. The policy itself lives in src/security/access-policy.ts.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { httpCredential, type AccessClass, type AccessPolicy } from '../../security/access-policy.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's access class; unset means 'api'. */
    access?: AccessClass;
  }
  interface FastifyInstance {
    /** Every route with its access class, as registered (createHttpApp installs it). */
    readonly routeAccess: readonly HttpRouteAccess[];
  }
}

/** Route options that give a route its access class: `app.get(path, withAccess('health'), handler)`. */
export const withAccess = (access: AccessClass): { config: { access: AccessClass } } => ({ config: { access } });

export interface HttpRouteAccess {
  readonly method: string;
  /** The route's pattern, as registered (`/v2/models/:model/ready`). */
  readonly url: string;
  readonly access: AccessClass;
}

/** The access class of the route a request matched ('api' when the route names none). */
export const accessOf = (request: FastifyRequest): AccessClass => request.routeOptions.config?.access ?? 'api';

/**
 * Guards every route of `app` and lists them in `app.routeAccess`. Call it on a fresh app, before
 * anything is registered: fastify adds a root hook only to plugins registered after it.
 */
export function installAccessControl(app: FastifyInstance, policy: AccessPolicy): void {
  const routes: HttpRouteAccess[] = [];
  app.decorate('routeAccess', routes);
  app.addHook('onRoute', (route) => {
    const access = route.config?.access ?? 'api';
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, access });
  });
  // preParsing rather than onRequest: it runs after every onRequest hook (the OpenAI CORS hook
  // answers preflights there and puts its headers on refusals, which browsers need to read them)
  // and before the body is read, so a refused client's body is never parsed. A throw here is
  // answered by the route's own error handler, in its protocol's shape.
  app.addHook('preParsing', async (request, reply, payload) => {
    try {
      policy.check(accessOf(request), httpCredential(request.headers));
    } catch (error) {
      reply.header('www-authenticate', 'Bearer');
      throw error;
    }
    return payload;
  });
}
