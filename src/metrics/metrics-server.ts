// GET /metrics on its own port (Triton's 8002), Prometheus text format. Plain node:http: one
// route needs no framework, and keeping it apart from the API server means a scrape never waits
// behind inference traffic's connection limits or body parsing.

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
  /** Who may scrape (the 'metrics' class: open unless --auth-metrics); without it anyone may. */
  readonly access?: AccessPolicy;
}

export interface MetricsServer {
  /** The port actually bound. */
  readonly port: number;
  close(): Promise<void>;
}

/** False (with the refusal sent) when the request may not scrape. */
function admitted(access: AccessPolicy | undefined, request: IncomingMessage, response: ServerResponse): boolean {
  try {
    access?.check('metrics', httpCredential(request.headers));
    return true;
  } catch (error) {
    const refusal = asConveyorError(error);
    response.writeHead(refusal.httpStatus, { 'Content-Type': 'text/plain; charset=utf-8', 'WWW-Authenticate': 'Bearer' }).end(`${refusal.message}\n`);
    return false;
  }
}

async function handle(options: MetricsServerOptions, request: IncomingMessage, response: ServerResponse): Promise<void> {
  if (!admitted(options.access, request, response)) return;
  const { registry } = options;
  const path = (request.url ?? '/').split('?')[0];
  if (path !== '/metrics') {
    response.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found\n');
    return;
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
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
