// GET /metrics on the HTTP serving port too, beside the metrics port: the Gateway API Inference
// Extension's endpoint picker (and most ServiceMonitors) scrape the pod's serving port by
// default. The same registry answers both, so the two can never disagree; the route is in the
// 'metrics' access class, open unless --auth-metrics, exactly as the metrics port is.

import type { FastifyInstance } from 'fastify';
import { withAccess } from '../kit/access.js';

/** What the route reads: the server's metrics registry (src/metrics MetricsRegistry satisfies it). */
export interface MetricsExposition {
  metrics(): Promise<string>;
  readonly contentType: string;
}

export function registerMetricsRoute(app: FastifyInstance, exposition: MetricsExposition): void {
  // Registered at the app's root, outside the KServe plugin: no raw-body parser or compression hook.
  app.get('/metrics', withAccess('metrics'), async (_request, reply) => {
    const body = await exposition.metrics();
    return reply.header('content-type', exposition.contentType).send(body);
  });
}
