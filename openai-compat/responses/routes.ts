// The /v1/responses routes on the OpenAI plugin: create, and the stored responses' retrieve,
// input_items, delete and cancel. One store per front end, sized by the limits table.

import type { FastifyInstance, FastifyReply } from 'fastify';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';
import type { OpenAIContext } from '../context.js';
import { createResponse } from './create.js';
import { ResponseStore } from './stored.js';

type Params = { Params: { id: string } };

export function responsesRoutes(app: FastifyInstance, ctx: OpenAIContext, signalOf: (reply: FastifyReply) => AbortSignal): void {
  const store = new ResponseStore({
    maxEntries: ctx.options.responsesStoreSize ?? DEFAULT_LIMITS.responsesStoreSize,
    ttlMs: (ctx.options.responsesStoreTtlSecs ?? DEFAULT_LIMITS.responsesStoreTtlSecs) * 1000,
  });
  app.post('/responses', (request, reply) => createResponse(ctx, store, request.body, reply, signalOf(reply)));
  app.get<Params>('/responses/:id', async (request) => store.retrieve(request.params.id));
  app.get<Params & { Querystring: Record<string, unknown> }>('/responses/:id/input_items', async (request) => store.inputItems(request.params.id, request.query));
  app.delete<Params>('/responses/:id', async (request) => store.remove(request.params.id));
  app.post<Params>('/responses/:id/cancel', async (request) => store.cancel(request.params.id));
}
