// Probes' request lines at debug level: at info the log holds every other request and no probe
// (health, model readiness, /metrics), at debug the probes too, and a probe that fails is logged
// at info / error whatever the level, as any request is.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerOptions } from '../../../../src/config/server-options.js';
import { startServer, type RunningServer } from '../../../../src/main.js';
import { createHttpApp } from '../../../../src/main.js';

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly req?: { readonly url: string };
  readonly reqId: string;
}

/** pino's numeric levels. */
const DEBUG = 20;
const INFO = 30;
const ERROR = 50;

function recordingLogger(level: 'debug' | 'info'): { options: object; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n')) if (text !== '') lines.push(JSON.parse(text));
      done();
    },
  });
  return { options: { level, stream }, lines };
}

const PROBES = ['/v2/health/live', '/v2/health/ready', '/metrics'];

describe('request lines of probes', () => {
  let server: RunningServer;
  let scrapeFails = false;
  const exposition = {
    contentType: 'text/plain; version=0.0.4; charset=utf-8',
    metrics: async () => {
      if (scrapeFails) throw new Error('registry unreadable');
      return '# HELP x A gauge\n# TYPE x gauge\nx 1\n';
    },
  };

  beforeAll(async () => {
    const root = await mkdtemp(join(tmpdir(), 'conveyor-probe-logs-'));
    server = await startServer(parseServerOptions(['--model-repository', root, '--host', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0']), { log: () => {} });
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function served(level: 'debug' | 'info'): Promise<{ app: FastifyInstance; lines: LogLine[] }> {
    const logger = recordingLogger(level);
    const app = createHttpApp(server.service, { logger: logger.options, metrics: exposition });
    await app.ready();
    return { app, lines: logger.lines };
  }

  /** Each request's lines by request id, in order of the requests. */
  async function linesOf(app: FastifyInstance, lines: LogLine[], urls: readonly string[]): Promise<Map<string, LogLine[]>> {
    const byUrl = new Map<string, LogLine[]>();
    for (const url of urls) {
      const before = lines.length;
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBeLessThan(600);
      byUrl.set(url, lines.slice(before));
    }
    return byUrl;
  }

  it('at info, probes write nothing and every other route its two lines', async () => {
    const { app, lines } = await served('info');
    const byUrl = await linesOf(app, lines, [...PROBES, '/v2', '/v2/models/absent/ready']);
    for (const url of PROBES) expect(byUrl.get(url), url).toEqual([]);
    expect(byUrl.get('/v2')!.map((l) => [l.level, l.msg])).toEqual([
      [INFO, 'incoming request'],
      [INFO, 'request completed'],
    ]);
    // A model's readiness is a probe too; its answer for an unknown model is a 4xx, not a failure.
    expect(byUrl.get('/v2/models/absent/ready')).toEqual([]);
    await app.close();
  });

  it('at debug, probes write their lines at debug', async () => {
    const { app, lines } = await served('debug');
    const byUrl = await linesOf(app, lines, PROBES);
    for (const url of PROBES) {
      const own = byUrl.get(url)!.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed');
      expect(
        own.map((l) => [l.level, l.msg]),
        url,
      ).toEqual([
        [DEBUG, 'incoming request'],
        [DEBUG, 'request completed'],
      ]);
      expect(own[0]!.req?.url).toBe(url);
    }
    await app.close();
  });

  it('a probe that fails is logged as any failed request is', async () => {
    const { app, lines } = await served('info');
    scrapeFails = true;
    try {
      const byUrl = await linesOf(app, lines, ['/metrics']);
      const failed = byUrl.get('/metrics')!;
      expect(failed.some((l) => l.level === ERROR)).toBe(true);
      expect(failed.find((l) => l.msg === 'request completed')?.level).toBe(INFO);
    } finally {
      scrapeFails = false;
      await app.close();
    }
  });
});
