// A server whose stdout nobody drains keeps serving (issue 35: a main thread nothing can stall).
// Log lines go to a pipe; when its reader falls behind (a log collector, a busy parent process)
// the pipe fills and a write gets EAGAIN. pino's synchronous writer then slept 100 ms on the
// serving thread before each retry, so every request that logged a line took ≥ 100 ms. The
// server now writes its log asynchronously: requests answer at their usual speed while the pipe
// is full, and the queued lines arrive, in order, once the reader drains it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { killCliServer, startCliServer, type CliServer } from '../support/cli-server.js';
import { configOf, makeRepository } from '../support/server.js';

let server: CliServer;

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') }]);
  server = await startCliServer(repository, ['--log-level', 'info']);
}, 120_000);
afterAll(async () => server && killCliServer(server));

/** GET the model's metadata (one request line logged at info, start and end), the ms it took. */
async function timedMetadata(id: string): Promise<number> {
  const sent = performance.now();
  const response = await fetch(`${server.http}/v2/models/bert`, { headers: { 'x-request-id': id } });
  await response.arrayBuffer();
  expect(response.status).toBe(200);
  return performance.now() - sent;
}

it('answers at full speed while its stdout pipe is full, and delivers the queued lines once read', async () => {
  server.child.stdout.pause();
  // Enough request lines to fill a 64 KiB pipe several times over.
  for (let i = 0; i < 400; i++) await timedMetadata(`fill-${i}`);
  const latencies: number[] = [];
  for (let i = 0; i < 40; i++) latencies.push(await timedMetadata(`measured-${i}`));
  latencies.sort((a, b) => a - b);
  const median = latencies[latencies.length >> 1]!;
  console.log(`with stdout unread: median ${median.toFixed(1)} ms, slowest ${latencies.at(-1)!.toFixed(1)} ms`);
  // A synchronous writer sleeps 100 ms per EAGAIN, so every one of these took ≥ 100 ms.
  expect(median).toBeLessThan(100);

  server.child.stdout.resume();
  const last = await server.waitForLog(/request completed/).then(() => waitForRequestId('measured-39'));
  expect(last).toBeGreaterThan(0);
  // In order: every fill line before the first measured one.
  const ids = server.lines.map((line) => (line as { reqId?: unknown }).reqId).filter((id): id is string => typeof id === 'string');
  expect(ids.lastIndexOf('fill-399')).toBeLessThan(ids.indexOf('measured-0'));
}, 120_000);

/** Resolves with the index of the first log line of request `id`, once it has been read. */
async function waitForRequestId(id: string): Promise<number> {
  const found = (): number => server.lines.findIndex((line) => (line as { reqId?: unknown }).reqId === id);
  while (found() < 0) await new Promise((resolve) => server.child.stdout.once('data', resolve));
  return found();
}
