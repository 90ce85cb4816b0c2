// The metrics port: GET /metrics answers the registry's text with its content type, anything
// else is 404/405, process metrics (event-loop lag included) are there, and close() does not
// wait for a scraper's keep-alive connection.
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createMetrics, startMetricsServer, type MetricsServer } from '../../../src/metrics/index.js';
import { parseExposition } from './exposition.js';

let server: MetricsServer | undefined;
afterEach(async () => server?.close());

describe('startMetricsServer', () => {
  it('serves the registry as Prometheus text on GET /metrics', async () => {
    const metrics = createMetrics({ models: () => [], engineType: 'conveyor' });
    server = await startMetricsServer({ host: '127.0.0.1', port: 0, registry: metrics.registry });
    expect(server.port).toBeGreaterThan(0);
    const response = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const m = parseExposition(await response.text());
    expect(m.types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
    expect(m.types.get('process_cpu_user_seconds_total')).toBe('counter');
    expect(m.types.get('nv_inference_request_success')).toBe('counter');
    expect(m.types.get('conveyor:time_to_first_token_seconds')).toBe('histogram');
  });

  it('answers 404 elsewhere and 405 to other methods', async () => {
    const metrics = createMetrics({ models: () => [], engineType: 'conveyor', processMetrics: false });
    server = await startMetricsServer({ host: '127.0.0.1', port: 0, registry: metrics.registry });
    expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'POST', body: 'x' })).status).toBe(405);
    expect((await fetch(`http://127.0.0.1:${server.port}/metrics?name=x`)).status).toBe(200);
  });

  it('answers 500 with the reason when a collector throws', async () => {
    const metrics = createMetrics({
      models: () => {
        throw new Error('snapshot failed');
      },
      engineType: 'conveyor',
      processMetrics: false,
    });
    server = await startMetricsServer({ host: '127.0.0.1', port: 0, registry: metrics.registry });
    const response = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    expect(response.status).toBe(500);
    expect(await response.text()).toMatch(/snapshot failed/);
  });

  it('closes promptly with a keep-alive connection open', async () => {
    const metrics = createMetrics({ models: () => [], engineType: 'conveyor', processMetrics: false });
    server = await startMetricsServer({ host: '127.0.0.1', port: 0, registry: metrics.registry });
    const agent = new Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      request({ host: '127.0.0.1', port: server!.port, path: '/metrics', agent }, (res) => res.resume().on('end', () => resolve()))
        .on('error', reject)
        .end();
    });
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(1000);
    agent.destroy();
    server = undefined;
  });

  it('reports a port already taken', async () => {
    const metrics = createMetrics({ models: () => [], engineType: 'conveyor', processMetrics: false });
    server = await startMetricsServer({ host: '127.0.0.1', port: 0, registry: metrics.registry });
    await expect(startMetricsServer({ host: '127.0.0.1', port: server.port, registry: metrics.registry })).rejects.toThrow(/EADDRINUSE/);
  });
});
