// GET /metrics on its own port (Triton's 8002), Prometheus text format, and the server's liveness
// and readiness probes (/v2/health/live, /v2/health/ready, answered as on the serving port).
// Plain node:http: three routes need no framework, and keeping them apart from the API server
// means a scrape or a probe never waits behind inference traffic's connection limits or body
// parsing: the shipped Kubernetes manifests probe liveness here, so a pod whose serving port is
// flooded with connections is not restarted (docs/operations.md, "Probes").

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { asConveyorError } from '../errors.js';
import { httpCredential, type AccessPolicy } from '../security/access-policy.js';
import type { MetricsRegistry } from './registry.js';

export interface MetricsServerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly registry: MetricsRegistry;
  /** Who may scrape (the 'metrics' class: open unless --auth-metrics) and probe ('health'); without it anyone may. */
  readonly access?: AccessPolicy;
  /** The server's liveness and readiness; without them only /metrics is served. */
  readonly probes?: HealthProbes;
}

/** What /v2/health/live and /v2/health/ready report: 200 when true, 400 when false (KServe's "not ready"). */
export interface HealthProbes {
  isLive(): boolean;
  isReady(): boolean;
}

export interface MetricsServer {
  /** The port actually bound. */
  readonly port: number;
  close(): Promise<void>;
}

/** False (with the refusal sent) when the request may not scrape or probe. */
function admitted(access: AccessPolicy | undefined, accessClass: 'metrics' | 'health', request: IncomingMessage, response: ServerResponse): boolean {
  try {
    access?.check(accessClass, httpCredential(request.headers));
    return true;
  } catch (error) {
    const refusal = asConveyorError(error);
    response.writeHead(refusal.httpStatus, { 'Content-Type': 'text/plain; charset=utf-8', 'WWW-Authenticate': 'Bearer' }).end(`${refusal.message}\n`);
    return false;
  }
}

/** The probe a path asks for, when the server has probes. */
function probeOf(path: string, probes: HealthProbes | undefined): (() => boolean) | undefined {
  if (!probes) return undefined;
  if (path === '/v2/health/live') return () => probes.isLive();
  if (path === '/v2/health/ready') return () => probes.isReady();
  return undefined;
}

async function handle(options: MetricsServerOptions, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const { registry } = options;
  const path = (request.url ?? '/').split('?')[0] ?? '/';
  const probe = probeOf(path, options.probes);
  if (!admitted(options.access, probe ? 'health' : 'metrics', request, response)) return;
  if (path !== '/metrics' && !probe) {
    response.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found\n');
    return;
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
    return;
  }
  if (probe) {
    // As on the serving port: an empty body, the status says it.
    response.writeHead(probe() ? 200 : 400, { 'Content-Length': 0 }).end();
    return;
  }
  try {
    const body = await registry.metrics();
    response.writeHead(200, { 'Content-Type': registry.contentType, 'Content-Length': Buffer.byteLength(body) });
    response.end(request.method === 'HEAD' ? undefined : body);
  } catch (error) {
    response.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`${(error as Error).message}\n`);
  }
}

export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const server = createServer((request, response) => void handle(options, request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      // A scraper's keep-alive connection would otherwise hold close() open until it times out.
      server.closeAllConnections();
    }));
  return { port, close };
}
