// Probes stay answerable under connection exhaustion (issue 35), on the real server with real
// sockets on loopback: clients hold the connection caps full with chunked bodies trickled a chunk
// a second, and meanwhile every liveness and readiness probe on the serving port (from the probe
// reserve past the caps) and on the metrics port is answered 200 within a second; an ordinary
// request past a cap is answered 503 with `connection: close` in its protocol's shape; the
// per-address cap refuses the 65th connection from one address while others are served. One run
// at the shipped defaults holds 2,160 connections from nine addresses. Loopback is 127/8, so
// each "client address" is a 127.x.y.z source address.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { PROBE_RESERVE } from '../../src/server/kit/connection-limits.js';
import { makeRepository, startTestServer, type TestServer } from '../support/server.js';

/** A client holding a connection: it sent a chunked request head and trickles its body. */
interface Held {
  readonly socket: Socket;
  /** Everything the server sent, once it closed the connection. */
  readonly answer: Promise<string>;
}

const held: Held[] = [];
// The trickle: one more body chunk on every held connection each second.
const trickle = setInterval(() => {
  for (const { socket } of held) if (!socket.destroyed && socket.writable) socket.write('1\r\nx\r\n');
}, 1000);

const HEADS = [
  'POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
  'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
];

/** Opens a connection from `localAddress`, sends a chunked request head and keeps trickling its body. */
function hold(port: number, localAddress: string): Promise<Held> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress }, () => {
      socket.off('error', reject);
      socket.on('error', () => {});
      socket.write(HEADS[held.length % HEADS.length]!);
      const entry = { socket, answer };
      held.push(entry);
      resolve(entry);
    });
    socket.once('error', reject);
    let data = '';
    socket.on('data', (chunk) => (data += String(chunk)));
    const answer = new Promise<string>((done) => socket.once('close', () => done(data)));
  });
}

async function holdMany(port: number, localAddress: string, count: number): Promise<Held[]> {
  const batch: Held[] = [];
  // In rounds of 100, so the listen backlog never overflows (a SYN past it is retried after 1 s).
  for (let i = 0; i < count; i += 100) batch.push(...(await Promise.all(Array.from({ length: Math.min(100, count - i) }, () => hold(port, localAddress)))));
  return batch;
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly ms: number;
}

/** One request on a fresh connection from `localAddress`, as kubelet probes (no keep-alive); fails past `timeoutMs`. */
function ask(port: number, path: string, localAddress: string, options: { method?: string; body?: string; timeoutMs?: number } = {}): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        localAddress,
        agent: false,
        method: options.method ?? 'GET',
        timeout: options.timeoutMs ?? 1000,
        headers: options.body ? { 'content-type': 'application/json' } : {},
      },
      (response) => {
        let body = '';
        response.on('data', (chunk) => (body += String(chunk)));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body, ms: performance.now() - started }));
      },
    );
    request.on('timeout', () => request.destroy(new Error(`${path}: no answer within ${options.timeoutMs ?? 1000} ms`)));
    request.on('error', reject);
    request.end(options.body);
  });
}

const PROBES = ['/v2/health/live', '/v2/health/ready'];

/** Every probe on both ports, from `localAddress`: each must be answered 200 within a second. */
async function probeAll(server: TestServer, localAddress: string): Promise<void> {
  for (const port of [server.httpPort, server.metricsPort]) {
    for (const path of PROBES) {
      const answer = await ask(port, path, localAddress);
      expect(answer.status, `${path} on ${port}`).toBe(200);
      expect(answer.ms, `${path} on ${port}`).toBeLessThan(1000);
    }
  }
}

/** Releases every held connection and waits until each is closed. */
async function release(): Promise<void> {
  const all = held.splice(0);
  for (const { socket } of all) socket.destroy();
  await Promise.all(all.map((h) => h.answer));
}

let repository: string;
beforeAll(async () => {
  repository = await makeRepository([]);
});
afterEach(release);
afterAll(() => clearInterval(trickle));

describe('past --http-max-connections', () => {
  let server: TestServer;
  const CAP = 64;
  beforeAll(async () => {
    server = await startTestServer(repository, ['--http-max-connections', String(CAP), '--http-max-connections-per-ip', '0']);
  });
  afterAll(async () => server?.stop());

  it('serves probes from the reserve and answers other requests 503 with connection: close', async () => {
    const ordinary = await holdMany(server.httpPort, '127.0.0.1', CAP);
    // Past the cap while it is full: a flood of the same trickling clients, and probes meanwhile.
    const flood = holdMany(server.httpPort, '127.0.0.1', 200);
    for (let round = 0; round < 5; round++) await probeAll(server, '127.0.0.2');
    const flooded = await flood;
    // Each flood connection is closed: answered 503 from the reserve, or unanswered once it was full.
    await expect.poll(() => flooded.filter((h) => !h.socket.destroyed).length, { timeout: PROBE_RESERVE.lifetimeMs + 2000 }).toBe(0);
    const refusals = (await Promise.all(flooded.map((h) => h.answer))).filter((a) => a !== '');
    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals) expect(refusal).toMatch(/^HTTP\/1\.1 503 [\s\S]*\r\nconnection: close\r\n/i);
    // The cap's own connections are untouched: still open, nothing answered.
    expect(ordinary.every((h) => !h.socket.destroyed)).toBe(true);

    // An ordinary request past the cap reads why, in its route's shape.
    const kserve = await ask(server.httpPort, '/v2', '127.0.0.3');
    expect(kserve.status).toBe(503);
    expect(kserve.headers.connection).toBe('close');
    expect(JSON.parse(kserve.body)).toEqual({ error: `The server is at its connection limit (--http-max-connections ${CAP}); retry shortly.` });
    const openai = await ask(server.httpPort, '/v1/chat/completions', '127.0.0.3', { method: 'POST', body: '{"model":"m","messages":[]}' });
    expect(openai.status).toBe(503);
    expect(openai.headers.connection).toBe('close');
    expect(openai.headers['retry-after']).toBe('1');
    expect(JSON.parse(openai.body)).toMatchObject({ error: { code: 'service_unavailable', message: expect.stringContaining('--http-max-connections') } });
    const unknown = await ask(server.httpPort, '/nowhere', '127.0.0.3');
    expect([unknown.status, unknown.headers.connection]).toEqual([503, 'close']);
    // A WebSocket upgrade past the cap is refused before it upgrades.
    const upgrade = await new Promise<number>((resolve, reject) => {
      const socket = new WebSocket(`ws://127.0.0.1:${server.httpPort}/v1/ws`, { localAddress: '127.0.0.3' });
      socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.once('open', () => reject(new Error('upgraded past the cap')));
      socket.once('error', reject);
    });
    expect(upgrade).toBe(503);
    // A probe from the reserve closes its connection too, so the reserve frees at once.
    expect((await ask(server.httpPort, '/v2/health/ready', '127.0.0.3')).headers.connection).toBe('close');

    // Once a held connection goes, a new one is ordinary again.
    ordinary[0]!.socket.destroy();
    await ordinary[0]!.answer;
    await expect.poll(async () => (await ask(server.httpPort, '/v2', '127.0.0.3')).status).toBe(200);
  }, 30_000);

  it('closes a connection unanswered once the reserve is full, and after its lifetime one that sends nothing', async () => {
    await holdMany(server.httpPort, '127.0.0.1', CAP);
    // The last test's connections may still be closing on the server's side: wait for a full cap.
    await expect.poll(async () => (await ask(server.httpPort, '/v2', '127.0.0.3')).status).toBe(503);
    // Silent connections past the cap: the first PROBE_RESERVE.perAddress from this address wait in
    // the reserve, the rest are closed at once; all are closed without a byte (nothing to answer).
    const silent = await Promise.all(
      Array.from(
        { length: PROBE_RESERVE.perAddress + 2 },
        () =>
          new Promise<Promise<string>>((resolve, reject) => {
            const socket = connect({ port: server.httpPort, host: '127.0.0.1', localAddress: '127.0.0.4' }, () => resolve(closed));
            socket.once('error', reject);
            const closed = new Promise<string>((done) => socket.once('close', () => done('')));
          }),
      ),
    );
    const started = performance.now();
    expect(await Promise.all(silent)).toEqual(Array(silent.length).fill(''));
    expect(performance.now() - started).toBeLessThan(PROBE_RESERVE.lifetimeMs + 1000);
    // Meanwhile another address's probe was never crowded out.
    await probeAll(server, '127.0.0.2');
  }, 30_000);
});

describe('--http-max-connections-per-ip', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(repository, ['--http-max-connections', '0', '--http-max-connections-per-ip', '64']);
  });
  afterAll(async () => server?.stop());

  it('refuses the 65th connection from one address, probes from it included only as probes', async () => {
    const own = await holdMany(server.httpPort, '127.0.0.5', 64);
    const refused = await ask(server.httpPort, '/v2', '127.0.0.5');
    expect(refused.status).toBe(503);
    expect(refused.headers.connection).toBe('close');
    expect(JSON.parse(refused.body)).toEqual({
      error: 'This client address is at its connection limit (--http-max-connections-per-ip 64); close idle connections or retry shortly.',
    });
    // The address over its cap may still probe; another address is served as usual.
    await probeAll(server, '127.0.0.5');
    expect((await ask(server.httpPort, '/v2', '127.0.0.6')).status).toBe(200);
    // A held connection that goes frees its address's slot.
    own[0]!.socket.destroy();
    await own[0]!.answer;
    await expect.poll(async () => (await ask(server.httpPort, '/v2', '127.0.0.5')).status).toBe(200);
  }, 30_000);
});

describe('at the shipped defaults', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(repository);
  });
  afterAll(async () => server?.stop());

  it('holds 2,160 trickling connections from nine addresses and answers every probe within a second', async () => {
    // 9 × 240: under the per-address default (256), past the connection default (2,048).
    const addresses = Array.from({ length: 9 }, (_, i) => `127.0.1.${i + 1}`);
    const all: Held[] = [];
    for (const address of addresses) all.push(...(await holdMany(server.httpPort, address, 240)));
    // 112 past the cap: each answered 503 from the reserve or closed once it was full; 2,048 held.
    await expect.poll(() => all.filter((h) => h.socket.destroyed).length, { timeout: 10_000 }).toBe(all.length - 2048);
    for (let round = 0; round < 3; round++) await probeAll(server, '127.0.0.2');
    const past = await ask(server.httpPort, '/v2', '127.0.0.3');
    expect([past.status, past.headers.connection]).toEqual([503, 'close']);
  }, 60_000);
});
