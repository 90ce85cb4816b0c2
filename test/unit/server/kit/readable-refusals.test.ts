// The lingering close's bounds and the 100-continue decision on a bare fastify app over loopback
// (the real clients are test/integration/readable-refusals.test.ts).
import { connect, type Socket } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { installReadableRefusals } from '../../../../src/server/kit/readable-refusals.js';

const LIMIT = 1024;
let app: FastifyInstance;

async function serve(httpLingerBytes: number, httpLingerSecs: number): Promise<number> {
  app = Fastify({ bodyLimit: LIMIT });
  installReadableRefusals(app, { httpLingerBytes, httpLingerSecs });
  app.post('/', async () => 'ok');
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}
afterEach(async () => app?.close());

interface Connection {
  readonly socket: Socket;
  /** Everything the server sent until it closed, and when it closed (ms after `open`). */
  readonly closed: Promise<{ text: string; afterMs: number }>;
  received(): string;
}

/** `endOnEnd`: the client sends nothing more and ends its side once the server ends its. */
function open(port: number, head: string, endOnEnd = true): Connection {
  // Half-open, as curl's and urllib's: the server's FIN does not stop a client that is still sending.
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  const started = performance.now();
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => {}); // a reset past the bound is what the bound means
  if (endOnEnd) socket.once('end', () => socket.end());
  socket.write(head);
  const closed = new Promise<{ text: string; afterMs: number }>((resolve) => socket.once('close', () => resolve({ text, afterMs: performance.now() - started })));
  return { socket, closed, received: () => text };
}

const post = (length: number, extra = '') => `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

describe('lingering close', () => {
  it('answers 413 and keeps reading a client still sending, closing at the time bound', async () => {
    const port = await serve(1 << 20, 0.5);
    const client = open(port, post(100_000), false);
    client.socket.write(Buffer.alloc(4096, 0x20)); // past the limit, far from the declared length
    const trickle = setInterval(() => client.socket.writable && client.socket.write(' '), 50);
    const { text, afterMs } = await client.closed;
    clearInterval(trickle);
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(afterMs).toBeGreaterThan(400);
    expect(afterMs).toBeLessThan(3000);
  });

  it('closes once the bytes read after the answer pass the byte bound, before the time bound', async () => {
    const port = await serve(64 * 1024, 20);
    const client = open(port, post(10_000_000), false);
    client.socket.write(Buffer.alloc(4096, 0x20));
    await expect.poll(() => client.received()).toMatch(/^HTTP\/1\.1 413 /);
    client.socket.write(Buffer.alloc(1_000_000, 0x20)); // read after the answer: past the bound
    // Still sending: once the server has closed, a write is answered with a reset.
    const trickle = setInterval(() => client.socket.writable && client.socket.write(' '), 50);
    const { text, afterMs } = await client.closed;
    clearInterval(trickle);
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(afterMs).toBeLessThan(5000);
  });

  it('closes as soon as the refused body has all arrived', async () => {
    const port = await serve(1 << 20, 20);
    const client = open(port, post(200_000));
    client.socket.write(Buffer.alloc(200_000, 0x20));
    const { text, afterMs } = await client.closed;
    expect(text).toMatch(/^HTTP\/1\.1 413 [\s\S]*connection: close/i);
    expect(afterMs).toBeLessThan(5000);
  });
});

describe('Expect: 100-continue', () => {
  it('is refused with 413 before the body when Content-Length is over the limit', async () => {
    const port = await serve(1 << 20, 1);
    const client = open(port, post(LIMIT + 1, 'Expect: 100-continue\r\n'));
    const { text } = await client.closed;
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).not.toContain('100 Continue');
  });

  it('is told to go on under the limit, and served', async () => {
    const port = await serve(1 << 20, 1);
    const body = '{"a":1}';
    const client = open(port, post(body.length, 'Expect: 100-continue\r\nConnection: close\r\n'));
    await expect.poll(() => client.received()).toContain('HTTP/1.1 100 Continue\r\n\r\n');
    client.socket.write(body);
    const { text } = await client.closed;
    expect(text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 [\s\S]*\r\n\r\nok$/);
  });
});
