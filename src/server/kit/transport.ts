// HTTP transport details tritonclient relies on: bodies read raw whatever the Content-Type,
// gzip/deflate request bodies, gzip/deflate responses on request, and client disconnects
// turned into an AbortSignal.

import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import type { ServerResponse } from 'node:http';
import { ConveyorError, invalidArg } from '../../errors.js';

const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);

export type ContentCoding = 'gzip' | 'deflate';

/** An error fastify's error handler sends with its own status (413 has no catalog code). */
export class HttpStatusError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Undoes Content-Encoding as a stream whose output is counted as it comes: a small compressed body
 * that would expand past `limit` is refused with 413 as soon as it passes the limit, holding at
 * most `limit` bytes, and a gzip member whose trailer already declares more is refused unread.
 */
export async function decodeContentEncoding(body: Buffer, encoding: string | undefined, limit: number): Promise<Buffer> {
  const coding = (encoding ?? 'identity').trim().toLowerCase();
  if (coding === 'identity' || coding === '' || body.byteLength === 0) return body;
  const tooLarge = () => new HttpStatusError(413, `the decompressed request body is larger than the ${limit}-byte limit`);
  let inflater: zlib.Gunzip | zlib.Inflate | zlib.InflateRaw;
  if (coding === 'gzip' || coding === 'x-gzip') {
    // Not gzip at all: its last four bytes are no size, and a wrong 413 would hide the mistake.
    if (!hasGzipMagic(body)) throw invalidArg(`failed to decompress the ${coding} request body: it is not ${coding} data (no gzip header)`);
    if (gzipDeclaredSize(body) > limit) throw tooLarge();
    inflater = zlib.createGunzip({ chunkSize: INFLATE_CHUNK_BYTES });
  } else if (coding === 'deflate') {
    // HTTP's "deflate" is zlib-wrapped (RFC 1950); some clients send a bare deflate stream.
    inflater = hasZlibHeader(body) ? zlib.createInflate({ chunkSize: INFLATE_CHUNK_BYTES }) : zlib.createInflateRaw({ chunkSize: INFLATE_CHUNK_BYTES });
  } else {
    throw invalidArg(`unsupported Content-Encoding '${encoding}' (supported: gzip, deflate)`);
  }
  return inflateWithin(inflater, body, limit, tooLarge, coding);
}

/** Inflated output is gathered in chunks this size: fewer, larger allocations than zlib's 16 KiB. */
const INFLATE_CHUNK_BYTES = 256 * 1024;

function inflateWithin(inflater: zlib.Gunzip | zlib.Inflate | zlib.InflateRaw, body: Buffer, limit: number, tooLarge: () => Error, coding: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let failed = false;
    const fail = (error: Error): void => {
      if (failed) return;
      failed = true;
      chunks.length = 0;
      inflater.destroy();
      reject(error);
    };
    inflater.on('data', (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total > limit) fail(tooLarge());
      else chunks.push(chunk);
    });
    inflater.on('error', (error) => fail(invalidArg(`failed to decompress the ${coding} request body: ${error.message}`)));
    inflater.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks, total));
    });
    inflater.end(body);
  });
}

/**
 * The uncompressed size a single-member gzip body declares in its trailer (ISIZE, modulo 2^32);
 * 0 when the body is too short to have one. Only a cheap early refusal: the stream's count is
 * what enforces the limit, since ISIZE wraps and a body may hold several members.
 */
function gzipDeclaredSize(body: Buffer): number {
  return body.byteLength >= 18 ? body.readUInt32LE(body.byteLength - 4) : 0;
}

function hasGzipMagic(body: Buffer): boolean {
  return body[0] === 0x1f && body[1] === 0x8b;
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
