// Per-model KServe v2 routes and Triton extensions: metadata, readiness, configuration and
// statistics, each with and without /versions/{v}.

import type { FastifyInstance } from 'fastify';
import type { InferenceService, ModelStatistics } from '../../../contracts/inference-service.js';
import { ConveyorError } from '../../../errors.js';
import { modelConfigToJsonValue } from '../../../repository/config/json.js';
import { withAccess } from '../../kit/access.js';

export interface ModelParams {
  model: string;
  version?: string;
}

/** The route's version, or undefined for "the highest ready version". */
export function versionOf(params: ModelParams): string | undefined {
  return params.version === undefined || params.version === '' ? undefined : params.version;
}

/** Both spellings of a per-model path: without and with /versions/{version}. */
export function modelPaths(suffix: string): string[] {
  return [`/v2/models/:model${suffix}`, `/v2/models/:model/versions/:version${suffix}`];
}

export function registerModelRoutes(app: FastifyInstance, service: InferenceService): void {
  for (const path of modelPaths('')) {
    app.get<{ Params: ModelParams }>(path, async (request) => {
      const { name, versions, platform, inputs, outputs, parameters } = service.modelMetadata(request.params.model, versionOf(request.params));
      return { name, versions, platform, inputs, outputs, parameters };
    });
  }
  for (const path of modelPaths('/ready')) {
    // A readiness probe, like /v2/health/ready (Triton's ModelReady).
    app.get<{ Params: ModelParams }>(path, withAccess('health'), async (request, reply) => {
      const { model } = request.params;
      const version = versionOf(request.params);
      if (service.modelReady(model, version)) return reply.code(200).send();
      const which = version === undefined ? `'${model}'` : `'${model}' version ${version}`;
      throw new ConveyorError('INVALID_ARG', `model ${which} is not ready`);
    });
  }
  for (const path of modelPaths('/config')) {
    app.get<{ Params: ModelParams }>(path, async (request) => modelConfigToJsonValue(service.modelConfig(request.params.model, versionOf(request.params))));
  }
  for (const path of ['/v2/models/stats', ...modelPaths('/stats')]) {
    app.get<{ Params: Partial<ModelParams> }>(path, async (request) => {
      const { model } = request.params;
      const stats = service.modelStatistics(model, model === undefined ? undefined : versionOf({ model, ...request.params }));
      return { model_stats: stats.map(withResponseStats) };
    });
  }
}

// Triton always prints response_stats (keyed by response index, filled for decoupled models).
function withResponseStats(stats: ModelStatistics): ModelStatistics & { response_stats: unknown } {
  const existing = (stats as { response_stats?: unknown }).response_stats;
  return { ...stats, response_stats: existing ?? {} };
}
