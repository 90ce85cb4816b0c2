// The web UI's routes without a browser: the page at /, /ui and /ui/, its script and stylesheet,
// and the status route the dashboard polls (metric families as JSON and recent errors).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE } from '../../ui/build.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

interface Status {
  time_ms: number;
  metrics: { name: string; type: string; samples: { name: string; labels: Record<string, string | number>; value: number }[] }[];
  errors: { time_ms: number; method: string; path: string; status: number; message: string }[];
}

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer(await makeRepository([{ name: 'bert-tiny', from: 'bert-tiny', config: configOf('bert-tiny', 'bert-tiny') }]));
}, 180_000);
afterAll(() => server?.stop());

describe('the web UI routes', () => {
  it('serves one page at /, /ui and /ui/, and the committed bundle and stylesheet', async () => {
    const pages = await Promise.all(['/', '/ui', '/ui/'].map((path) => fetch(`${server.http}${path}`)));
    for (const page of pages) expect([page.status, page.headers.get('content-type'), page.headers.get('cache-control')]).toEqual([200, 'text/html; charset=utf-8', 'no-cache']);
    const [html] = await Promise.all(pages.map((page) => page.text()));
    expect(html).toContain('<script type="module" src="/ui/app.js"></script>');
    // Nothing is fetched from elsewhere: every reference is the server's own.
    expect(html!.match(/(?:src|href)="([^"]+)"/g)).toEqual(['href="data:,"', 'href="/ui/style.css"', 'src="/ui/app.js"']);
    const script = await fetch(`${server.http}/ui/app.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).toBe(readFileSync(BUNDLE, 'utf8'));
    expect((await fetch(`${server.http}/ui/style.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('answers the status route with every metric family and the recent errors, newest first', async () => {
    await fetch(`${server.http}/v2/models/absent/infer`, { method: 'POST', body: '{}' });
    await fetch(`${server.http}/v1/embeddings?trace=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"bert-tiny"}' });
    const status = (await (await fetch(`${server.http}/ui/api/status`)).json()) as Status;
    expect(Math.abs(status.time_ms - Date.now())).toBeLessThan(60_000);
    const names = status.metrics.map((family) => family.name);
    expect(names).toEqual(expect.arrayContaining(['nv_inference_request_success', 'conveyor_inference_batch_size', 'nodejs_eventloop_lag_p99_seconds']));
    const batch = status.metrics.find((family) => family.name === 'conveyor_inference_batch_size')!;
    expect(new Set(batch.samples.map((sample) => sample.name))).toEqual(new Set(['conveyor_inference_batch_size_bucket', 'conveyor_inference_batch_size_sum', 'conveyor_inference_batch_size_count']));
    expect(status.errors.slice(0, 2)).toEqual([
      { time_ms: expect.any(Number), method: 'POST', path: '/v1/embeddings', status: 400, message: expect.stringContaining('input') },
      { time_ms: expect.any(Number), method: 'POST', path: '/v2/models/absent/infer', status: 400, message: "the inference request needs an 'inputs' array" },
    ]);
  });
});
