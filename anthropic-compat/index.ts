// The Anthropic-compatible front end as a fastify plugin on the HTTP port, beside the OpenAI
// routes: POST /v1/messages and POST /v1/messages/count_tokens over the same LLM machinery
// (model lookup, chat template, tool plan, engine; admission is the serving layer's). Every route is behind the API
// keys (src/server/kit/access.ts takes `x-api-key` as Anthropic's clients send it, beside
// `Authorization: Bearer`); `anthropic-version` and `anthropic-beta` are accepted and unused.
// Bodies parse as JSON whatever their Content-Type, and every failure is answered in
// Anthropic's error shape.

import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { parseJsonBodies } from '../src/server/kit/json-bodies.js';
import { abortOnDisconnect } from '../src/server/kit/transport.js';
import type { ConveyorService } from '../src/serving/conveyor-service.js';
import { corsHook } from '../src/server/kit/cors.js';
import { AnthropicContext, type AnthropicOptions } from './context.js';
import { countTokens } from './count-tokens.js';
import { sendAnthropicError } from './errors.js';
import { createMessage } from './messages.js';

export type { AnthropicOptions } from './context.js';

export interface AnthropicRouteOptions extends AnthropicOptions {
  /** As the OpenAI routes' (--cors-allow-origin); their `OPTIONS /v1/*` route answers the preflights. */
  readonly corsAllowOrigins?: readonly string[];
  readonly jsonMaxBodyBytes?: number;
  readonly jsonMaxDepth?: number;
}

/** Register with `app.register(anthropicRoutes(service, options))` on the HTTP app. */
export function anthropicRoutes(service: ConveyorService, options: AnthropicRouteOptions): FastifyPluginAsync {
  const ctx = new AnthropicContext(service, options);
  const routes: FastifyPluginAsync = async (app) => {
    parseJsonBodies(app, options);
    app.setErrorHandler((error, request, reply) => sendAnthropicError(error, request, reply));
    const cors = corsHook(options.corsAllowOrigins ?? []);
    if (cors) app.addHook('onRequest', cors);
    app.post('/messages', (request, reply: FastifyReply) => createMessage(ctx, request.body, reply, abortOnDisconnect(reply.raw)));
    app.post('/messages/count_tokens', async (request) => countTokens(ctx, request.body));
  };
  return async (app) => {
    await app.register(routes, { prefix: '/v1' });
  };
}
