// Model lifecycle against the real server: explicit load/unload with requests in flight, poll
// mode picking up new versions, a broken config.pbtxt failing alone, and the CLI front door.
import { spawn } from 'node:child_process';
import { rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});
const image = Array.from({ length: 3 * 224 * 224 }, (_, i) => Math.cos(i * 0.003));
const infer = (s: TestServer, model: string, version = '') =>
  fetch(`${s.http}/v2/models/${model}${version ? `/versions/${version}` : ''}/infer`, {
    method: 'POST',
    body: JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: image }] }),
  });
const waitFor = async (check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> => {
  await vi.waitFor(async () => expect(await check()).toBe(true), { timeout: timeoutMs, interval: 100 });
};

describe('model lifecycle', () => {
  it('explicit mode: loads on request, lets in-flight requests finish on unload, then refuses', async () => {
    const repository = await makeRepository([
      { name: 'slow', from: 'resnet-tiny', config: configOf('resnet-tiny', 'slow', (t) => t.replace('max_queue_delay_microseconds: 5000', 'max_queue_delay_microseconds: 3000000')) },
    ]);
    const server = await startTestServer(repository, ['--model-control-mode', 'explicit']);
    servers.push(server);
    expect((await fetch(`${server.http}/v2/models/slow/ready`)).status).toBe(400);
    expect((await fetch(`${server.http}/v2/repository/models/slow/load`, { method: 'POST' })).status).toBe(200);
    const inFlight = Array.from({ length: 4 }, () => infer(server, 'slow'));
    // Wait until all four sit in the queue behind the 3 s batching delay.
    const slow = server.manager.resolve('slow');
    await waitFor(async () => slow.pendingRequests?.() === 4);
    const unloaded = await fetch(`${server.http}/v2/repository/models/slow/unload`, { method: 'POST' });
    expect(unloaded.status).toBe(200);
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const after = await infer(server, 'slow');
    expect(after.status).toBeGreaterThanOrEqual(400);
    const index = await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST' })).json();
    expect(index).toEqual([{ name: 'slow', version: '', state: 'UNAVAILABLE', reason: 'unloaded' }]);
  });

  it('poll mode: serves a new version directory and drops a removed one', async () => {
    const repository = await makeRepository([{ name: 'cnn', from: 'resnet-tiny', config: configOf('resnet-tiny', 'cnn', (t) => t.replace('latest: { num_versions: 1 }', 'all: {}')) }]);
    const server = await startTestServer(repository, ['--model-control-mode', 'poll', '--repository-poll-secs', '0.3']);
    servers.push(server);
    await symlink(join(DEFAULT_REPOSITORY, 'resnet-tiny', '1'), join(repository, 'cnn', '2'), 'dir');
    await waitFor(async () => (await (await fetch(`${server.http}/v2/models/cnn`)).json()).versions?.length === 2);
    expect((await infer(server, 'cnn', '2')).status).toBe(200);
    await rm(join(repository, 'cnn', '1'));
    await waitFor(async () => JSON.stringify((await (await fetch(`${server.http}/v2/models/cnn`)).json()).versions) === '["2"]');
    expect((await infer(server, 'cnn', '1')).status).toBe(404);
  });

  it('a config.pbtxt with errors fails that model alone, with file:line:col in the index', async () => {
    const repository = await makeRepository([
      { name: 'good', from: 'resnet-tiny', config: configOf('resnet-tiny', 'good') },
      { name: 'broken', from: 'resnet-tiny', config: 'name: "broken"\nmax_batch_size: 8\ninput [ { name: "input" data_type: TYPE_NOPE dims: [3] } ]\n' },
    ]);
    const server = await startTestServer(repository, ['--strict-readiness', 'false']);
    servers.push(server);
    expect((await infer(server, 'good')).status).toBe(200);
    const index = await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST' })).json();
    const broken = index.find((row: { name: string }) => row.name === 'broken');
    expect(broken.state).toBe('UNAVAILABLE');
    expect(broken.reason).toMatch(/config\.pbtxt:3:\d+/);
    expect((await fetch(`${server.http}/v2/models/broken/ready`)).status).toBe(400);
  });

  it('strict readiness: not ready while a model failed to load', async () => {
    const repository = await makeRepository([{ name: 'broken', from: 'resnet-tiny', config: 'name: "other"\n' }]);
    const server = await startTestServer(repository);
    servers.push(server);
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(400);
    expect((await fetch(`${server.http}/v2/health/live`)).status).toBe(200);
  });

  it('npm start: the CLI serves a repository on free ports and logs them', async () => {
    const repository = await makeRepository([{ name: 'cnn', from: 'resnet-tiny', config: configOf('resnet-tiny', 'cnn') }]);
    await writeFile(join(repository, 'README'), 'not a model');
    // node itself, not npx: a signal sent to an npx wrapper does not reach the server, which would outlive the test.
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli.ts', 'serve', '--model-repository', repository, '--host', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    try {
      const port = await new Promise<number>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const match = /HTTP \(KServe v2\) listening on 127\.0\.0\.1:(\d+)/.exec(out);
          if (match) resolve(Number(match[1]));
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      expect((await fetch(`http://127.0.0.1:${port}/v2/health/ready`)).status).toBe(200);
      // Structured JSON logs: the request's completion line carries the client's request id
      // (server metadata: probes such as health log at debug level only, probe-logging.ts).
      expect((await fetch(`http://127.0.0.1:${port}/v2`, { headers: { 'x-request-id': 'probe-42' } })).status).toBe(200);
      const completion = () => out.split('\n').find((l) => l.includes('"reqId":"probe-42"') && l.includes('responseTime'));
      await waitFor(async () => completion() !== undefined);
      const line = completion();
      expect(JSON.parse(line!)).toMatchObject({ level: 30, reqId: 'probe-42', res: { statusCode: 200 } });
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});
