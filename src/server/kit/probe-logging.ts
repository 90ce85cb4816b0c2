// Request lines for probes at debug level. Kubernetes probes every pod every few seconds and the
// endpoint picker scrapes /metrics every 50 ms: at info level that is two lines per probe (40 a
// second per picker), each a synchronous write on the serving thread, which buries the request
// log and adds to the very latency the probe measures. A probe is a route whose access class is
// 'health' or 'metrics' (access.ts); one that fails (an error, or a 5xx answer) is logged at
// info and error as any request is. Every other route logs as fastify does.

import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { AccessClass } from '../../security/access-policy.js';
import { accessOf } from './access.js';

const PROBE_ACCESS: ReadonlySet<AccessClass> = new Set<AccessClass>(['health', 'metrics']);

export const isProbe = (request: FastifyRequest): boolean => PROBE_ACCESS.has(accessOf(request));

export class ProbeQuietLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (isProbe(request)) request.log.debug({ req: request }, 'incoming request');
    else super.incomingRequest(request, reply, metadata);
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (isProbe(request) && !error && reply.statusCode < 500) reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
    else super.requestCompleted(error, request, reply, metadata);
  }
}
