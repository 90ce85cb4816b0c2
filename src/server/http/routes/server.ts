// Server-level KServe v2 routes: liveness, readiness and server metadata. Health answers are
// status codes with empty bodies (200 true, 400 false), as Triton and tritonclient expect.

import type { FastifyInstance } from 'fastify';
import type { InferenceService } from '../../../contracts/inference-service.js';
import { withAccess } from '../../kit/access.js';

export function registerServerRoutes(app: FastifyInstance, service: InferenceService): void {
  app.get('/v2/health/live', withAccess('health'), async (_request, reply) => reply.code(service.isLive() ? 200 : 400).send());
  app.get('/v2/health/ready', withAccess('health'), async (_request, reply) => reply.code(service.isReady() ? 200 : 400).send());
  app.get('/v2', async () => {
    const { name, version, extensions } = service.serverMetadata();
    return { name, version, extensions };
  });
}
