// Refusals a client can read. A request refused before its body is read (413 past the body
// limit) is answered with `connection: close`, and Node then destroys the socket while the client
// is still sending: the kernel resets the connection, and curl without Expect, Python's urllib,
// Node's http and the OpenAI SDKs see EPIPE / ECONNRESET instead of the answer (the SDKs retry a
// request that can never succeed). So, as nginx's lingering close: after the answer the write
// side is closed and the rest of the body is read and discarded, up to a byte and a time bound,
// before the socket goes. And a client that sends `Expect: 100-continue` is told 100 only when
// the route's body limit admits its Content-Length; past it the 413 comes before the body.

import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ResourceLimits } from '../../config/limits.js';

/** The most of a refused body read and discarded, and the longest its socket is kept open for it. */
export type LingerLimits = Pick<ResourceLimits, 'httpLingerBytes' | 'httpLingerSecs'>;

export function installReadableRefusals(app: FastifyInstance, limits: LingerLimits): void {
  const bounds = { bytes: limits.httpLingerBytes, ms: limits.httpLingerSecs * 1000 };
  // Listening for 'checkContinue' stops Node sending 100 Continue itself: the request goes to
  // fastify unanswered, and the preParsing hook (after routing, before the body is read) decides.
  app.server.on('checkContinue', (request, response) => app.server.emit('request', request, response));
  app.addHook('preParsing', (request, reply, payload, done) => {
    const declared = Number(request.headers['content-length']);
    // Past the limit the body parser refuses on Content-Length alone, reading nothing.
    if (expectsContinue(request.headers.expect) && !(declared > request.routeOptions.bodyLimit)) reply.raw.writeContinue();
    done(null, payload);
  });
  app.addHook('onSend', (request, _reply, payload, done) => {
    if (!request.raw.complete) lingerOnClose(request.raw, bounds);
    done(null, payload);
  });
}

/** Sets a front end's body limit on each route it registers afterwards, so `request.routeOptions.bodyLimit` is the limit its parser enforces. */
export function routeBodyLimit(app: FastifyInstance, limit: number): void {
  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= limit;
  });
}

function expectsContinue(expect: string | undefined): boolean {
  return expect !== undefined && expect.trim().toLowerCase() === '100-continue';
}

interface LingerBounds {
  readonly bytes: number;
  readonly ms: number;
}

const lingering = new WeakSet<Socket>();

/**
 * Arms a lingering close for an answer sent before `request`'s body was all read. Node closes a
 * connection it will not keep alive with `socket.destroySoon()` once the answer is written; on
 * this socket that becomes: close the write side, read on until the body ends, the client gives
 * up, or a bound is reached, then destroy. A kept-alive connection never calls it (Node reads
 * and discards the rest of the body itself).
 */
function lingerOnClose(request: IncomingMessage, bounds: LingerBounds): void {
  const socket = request.socket;
  if (lingering.has(socket)) return;
  lingering.add(socket);
  const closeSoon = socket.destroySoon;
  socket.destroySoon = () => {
    socket.destroySoon = closeSoon;
    if (request.complete || socket.destroyed) closeSoon.call(socket);
    else linger(request, socket, bounds);
  };
}

function linger(request: IncomingMessage, socket: Socket, bounds: LingerBounds): void {
  socket.end(); // the answer, then FIN: the client has it whatever it does next
  // Node's parser discards a dumped request's body without a 'data' event: count the socket's bytes.
  const readBefore = socket.bytesRead;
  const close = (): void => {
    clearTimeout(timer);
    clearInterval(counting);
    socket.destroy();
  };
  // Nothing unread is left to turn the close into a reset; let the FIN go out first.
  const closeFlushed = (): void => {
    if (socket.writableFinished) close();
    else socket.once('finish', close);
  };
  const timer = setTimeout(close, bounds.ms);
  const counting = setInterval(() => {
    if (socket.bytesRead - readBefore > bounds.bytes) close();
  }, LINGER_COUNT_MS);
  timer.unref();
  counting.unref();
  request.once('end', closeFlushed); // the whole body is in
  socket.once('end', closeFlushed); // the client stopped sending
  socket.once('close', () => {
    clearTimeout(timer);
    clearInterval(counting);
  });
  request.resume();
}

/** How often a lingering socket's bytes are compared with the bound: 64 MiB arrive in ~50 ms on loopback. */
const LINGER_COUNT_MS = 50;
