// HTTP transport details tritonclient relies on: bodies read raw whatever the Content-Type,
// gzip/deflate request bodies, gzip/deflate responses on request, and client disconnects
// turned into an AbortSignal.

import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import type { ServerResponse } from 'node:http';
import { ConveyorError, invalidArg } from '../../errors.js';

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);
const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);

export type ContentCoding = 'gzip' | 'deflate';

/** An error fastify's error handler sends with its own status (413 has no catalog code). */
export class HttpStatusError extends Error {
  constructor(readonly statusCode: number, message: string) {
    super(message);
  }
}

/**
 * Undoes Content-Encoding. The decoded size is capped at `limit` so a small compressed body
 * cannot expand past the body limit.
 */
export async function decodeContentEncoding(body: Buffer, encoding: string | undefined, limit: number): Promise<Buffer> {
  const coding = (encoding ?? 'identity').trim().toLowerCase();
  if (coding === 'identity' || coding === '' || body.byteLength === 0) return body;
  const options = { maxOutputLength: limit };
  try {
    if (coding === 'gzip' || coding === 'x-gzip') return await gunzip(body, options);
    // HTTP's "deflate" is zlib-wrapped (RFC 1950); some clients send a bare deflate stream.
    if (coding === 'deflate') return await (hasZlibHeader(body) ? inflate(body, options) : inflateRaw(body, options));
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new HttpStatusError(413, `the decompressed request body is larger than the ${limit}-byte limit`);
    }
    throw invalidArg(`failed to decompress the ${coding} request body: ${(error as Error).message}`);
  }
  throw invalidArg(`unsupported Content-Encoding '${encoding}' (supported: gzip, deflate)`);
}

function hasZlibHeader(body: Buffer): boolean {
  const cmf = body[0] ?? 0;
  const flg = body[1] ?? 0;
  return (cmf & 0x0f) === 8 && ((cmf << 8) | flg) % 31 === 0;
}

/** The coding to answer with: the client's first acceptable of gzip and deflate, if any. */
export function chooseResponseCoding(acceptEncoding: string | string[] | undefined): ContentCoding | undefined {
  const header = Array.isArray(acceptEncoding) ? acceptEncoding.join(',') : acceptEncoding;
  if (!header) return undefined;
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    if (name === 'gzip' || name === 'x-gzip') return 'gzip';
    if (name === 'deflate') return 'deflate';
  }
  return undefined;
}

export function compress(payload: Buffer | string, coding: ContentCoding): Promise<Buffer> {
  return coding === 'gzip' ? gzip(payload) : deflate(payload);
}

/**
 * A signal that fires when the client goes away before the response is written, so queued
 * work can be dropped. `close` on the response fires both after a normal finish and on a
 * dropped connection; only the latter leaves the response unfinished.
 */
export function abortOnDisconnect(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  const abort = () => controller.abort(new ConveyorError('CANCELLED', 'the client disconnected before the response was sent'));
  if (response.destroyed || response.socket?.destroyed === true) {
    abort();
    return controller.signal;
  }
  response.once('close', () => {
    if (!response.writableFinished) abort();
  });
  return controller.signal;
}
