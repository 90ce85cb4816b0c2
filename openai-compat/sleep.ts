// vLLM's sleep mode routes: POST /sleep[?level=1|2] releases an LLM's sessions and KV memory,
// POST /wake_up loads it again with the config it had, GET /is_sleeping answers
// {"is_sleeping": bool}. As in vLLM, nothing wakes a sleeping model but /wake_up: a generation
// request for it is refused with a 503 that says so. `?model=` picks the model where several are
// served; without it, the first LLM by name (vLLM serves one). The state lives in
// src/serving/model-residency.ts.

import type { FastifyInstance } from 'fastify';
import { ConveyorError, invalidArg } from '../src/errors.js';
import type { ModelResidency } from '../src/serving/model-residency.js';
import { withAccess } from '../src/server/kit/access.js';
import type { OpenAIContext } from './context.js';

interface SleepQuery {
  readonly model?: string;
  readonly level?: string;
}

/** vLLM's levels: 1 offloads the weights, 2 discards them; both release everything here (model-residency.ts says why). */
const SLEEP_LEVELS = ['1', '2'];

export function registerSleepRoutes(app: FastifyInstance, ctx: OpenAIContext): void {
  app.post<{ Querystring: SleepQuery }>('/sleep', withAccess('control'), async (request, reply) => {
    const level = request.query.level ?? '1';
    if (!SLEEP_LEVELS.includes(level)) throw invalidArg(`level must be 1 or 2, got '${level}'`, 'level');
    const { residency, model } = await target(ctx, request.query.model);
    await residency.sleep(model);
    return reply.code(200).send();
  });
  app.post<{ Querystring: SleepQuery }>('/wake_up', withAccess('control'), async (request, reply) => {
    const { residency, model } = await target(ctx, request.query.model);
    await residency.wakeUp(model);
    return reply.code(200).send();
  });
  app.get<{ Querystring: SleepQuery }>('/is_sleeping', async (request) => {
    const { residency, model } = await target(ctx, request.query.model);
    return { is_sleeping: residency.isSleeping(model) };
  });
}

/** The LLM a sleep route acts on: the one named (loaded or asleep), else the first by name. */
async function target(ctx: OpenAIContext, named: string | undefined): Promise<{ residency: ModelResidency; model: string }> {
  const residency = ctx.service.residency;
  if (!residency) throw new ConveyorError('UNSUPPORTED', 'sleep mode is not available on this server');
  const asleep = (await residency.unloadedModels()).filter((m) => m.state === 'SLEEPING' && m.config.backend === 'llm').map((m) => m.name);
  if (named !== undefined && named !== '') {
    if (!asleep.includes(named)) ctx.llm(named); // unknown → 404, not an LLM → 400
    return { residency, model: named };
  }
  const names = [...new Set([...ctx.service.llmModels().map((m) => m.name), ...asleep])].sort();
  if (names.length === 0) throw invalidArg('no generation model is loaded or sleeping', 'model');
  return { residency, model: names[0]! };
}
