// The OpenAI-compatible front end as a fastify plugin, registered beside the KServe routes on the
// HTTP port: /v1/* (models, chat/completions, completions, embeddings, responses) and vLLM's /tokenize,
// /detokenize, /tokenizer_info and token-in / token-out /inference/v1/generate, all behind the API
// keys (src/server/kit/access.ts guards every route on the port). Both halves parse every body as JSON whatever its
// Content-Type (curl -d sends form encoding), answer every failure in OpenAI's error shape, and
// add CORS headers only when configured. An unknown /v1 path is a 404 in the same shape.

import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ConveyorService } from '../src/serving/conveyor-service.js';
import { parseJsonBodies } from '../src/server/kit/json-bodies.js';
import { abortOnDisconnect } from '../src/server/kit/transport.js';
import { chatCompletions } from './chat.js';
import { completions } from './completions.js';
import { OpenAIContext, type OpenAIOptions } from './context.js';
import { createEmbeddings } from './embeddings.js';
import { OpenAIRequestError, sendOpenAIError } from './errors.js';
import { listModels, retrieveModel } from './models.js';
import { corsHook } from '../src/server/kit/cors.js';
import { responsesRoutes } from './responses/routes.js';
import { renderChatCompletion, renderCompletion } from './render.js';
import { detokenize, tokenize } from './tokenize.js';
import { generateTokens } from './generate-tokens.js';
import { tokenizerInfo } from './tokenizer-info.js';
import { registerSleepRoutes } from './sleep.js';

export type { OpenAIOptions } from './context.js';

function installCommon(app: FastifyInstance, options: OpenAIOptions): void {
  parseJsonBodies(app, options);
  app.setErrorHandler((error, request, reply) => sendOpenAIError(error, request, reply));
  const cors = corsHook(options.corsAllowOrigins);
  if (cors) app.addHook('onRequest', cors);
}

/** Every POST that generates gets a signal that fires when its client goes away. */
const signalOf = (reply: FastifyReply): AbortSignal => abortOnDisconnect(reply.raw);

function v1Routes(ctx: OpenAIContext): FastifyPluginAsync {
  return async (app) => {
    installCommon(app, ctx.options);
    app.get('/models', async () => listModels(ctx));
    app.get<{ Params: { id: string } }>('/models/:id', async (request) => retrieveModel(ctx, request.params.id));
    app.post('/chat/completions', (request, reply) => chatCompletions(ctx, request.body, reply, signalOf(reply)));
    app.post('/completions', (request, reply) => completions(ctx, request.body, reply, signalOf(reply)));
    // vLLM's render routes: the prompt's token ids as the engine would get them, nothing generated.
    app.post('/chat/completions/render', async (request) => renderChatCompletion(ctx, request.body));
    app.post('/completions/render', async (request) => renderCompletion(ctx, request.body));
    app.post('/embeddings', (request, reply) => createEmbeddings(ctx, request.body, signalOf(reply)));
    responsesRoutes(app, ctx, signalOf);
    // Preflights reach the CORS hook through a route; with CORS off they fall to the 404 below.
    if (ctx.options.corsAllowOrigins.length > 0) app.options('/*', async (_request, reply) => reply.code(204).send());
    app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) =>
      sendOpenAIError(new OpenAIRequestError('NOT_FOUND', `Invalid URL (${request.method} ${request.url})`, undefined, null), request, reply),
    );
  };
}

function tokenizerRoutes(ctx: OpenAIContext): FastifyPluginAsync {
  return async (app) => {
    installCommon(app, ctx.options);
    app.post('/tokenize', async (request) => tokenize(ctx, request.body));
    app.post('/detokenize', async (request) => detokenize(ctx, request.body));
    // vLLM answers for its one model; with several served, ?model= picks one.
    app.get<{ Querystring: { model?: string } }>('/tokenizer_info', async (request) => tokenizerInfo(ctx.llmOrOnly(request.query.model)));
    registerSleepRoutes(app, ctx);
    // vLLM's token-in / token-out route (RL and evaluation frameworks): ids in, ids out.
    app.post('/inference/v1/generate', (request, reply) => generateTokens(ctx, request.body, reply, signalOf(reply)));
    if (ctx.options.corsAllowOrigins.length > 0) {
      for (const path of ['/tokenize', '/detokenize', '/tokenizer_info', '/inference/v1/generate']) app.options(path, async (_request, reply) => reply.code(204).send());
    }
  };
}

/** Register with `app.register(openaiRoutes(service, options))` on the HTTP app. */
export function openaiRoutes(service: ConveyorService, options: OpenAIOptions): FastifyPluginAsync {
  const ctx = new OpenAIContext(service, options);
  return async (app) => {
    await app.register(v1Routes(ctx), { prefix: '/v1' });
    await app.register(tokenizerRoutes(ctx));
  };
}
