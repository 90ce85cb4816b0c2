import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateRawSync, deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { ConveyorError } from '../../../../src/errors.js';
import { abortOnDisconnect, chooseResponseCoding, compress, decodeContentEncoding, HttpStatusError } from '../../../../src/server/kit/transport.js';
import { asyncErrorOf } from '../http/support.js';

const payload = Buffer.from(JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [64], data: Array(64).fill(0.5) }] }));

describe('request Content-Encoding', () => {
  it('passes identity and absent codings through', async () => {
    expect(await decodeContentEncoding(payload, undefined, 1e6)).toBe(payload);
    expect(await decodeContentEncoding(payload, 'identity', 1e6)).toBe(payload);
  });

  it('decodes gzip and deflate (zlib-wrapped as HTTP defines it, or bare)', async () => {
    expect((await decodeContentEncoding(gzipSync(payload), 'gzip', 1e6)).equals(payload)).toBe(true);
    expect((await decodeContentEncoding(gzipSync(payload), ' GZIP ', 1e6)).equals(payload)).toBe(true);
    expect((await decodeContentEncoding(deflateSync(payload), 'deflate', 1e6)).equals(payload)).toBe(true);
    expect((await decodeContentEncoding(deflateRawSync(payload), 'deflate', 1e6)).equals(payload)).toBe(true);
  });

  it('leaves an empty body alone whatever the coding', async () => {
    expect((await decodeContentEncoding(Buffer.alloc(0), 'gzip', 10)).byteLength).toBe(0);
  });

  it('rejects unsupported codings and corrupt data as INVALID_ARG', async () => {
    const unsupported = await asyncErrorOf(decodeContentEncoding(payload, 'br', 1e6));
    expect(unsupported).toBeInstanceOf(ConveyorError);
    expect((unsupported as ConveyorError).code).toBe('INVALID_ARG');
    expect(unsupported.message).toBe("unsupported Content-Encoding 'br' (supported: gzip, deflate)");
    const corrupt = await asyncErrorOf(decodeContentEncoding(Buffer.from('not gzip at all'), 'gzip', 1e6));
    expect((corrupt as ConveyorError).code).toBe('INVALID_ARG');
    expect(corrupt.message).toMatch(/^failed to decompress the gzip request body: /);
  });

  it('answers a body declared gzip that is not gzip with INVALID_ARG, not 413, whatever its last bytes say', async () => {
    const notGzip = Buffer.concat([Buffer.from('{"inputs": []}'), Buffer.from([0xff, 0xff, 0xff, 0x7f])]);
    const error = await asyncErrorOf(decodeContentEncoding(notGzip, 'gzip', 1024));
    expect((error as ConveyorError).code).toBe('INVALID_ARG');
    expect(error.message).toBe('failed to decompress the gzip request body: it is not gzip data (no gzip header)');
  });

  it('refuses a body that decompresses past the limit with 413', async () => {
    const bomb = gzipSync(Buffer.alloc(1 << 20));
    const error = await asyncErrorOf(decodeContentEncoding(bomb, 'gzip', 1000));
    expect(error).toBeInstanceOf(HttpStatusError);
    expect((error as HttpStatusError).statusCode).toBe(413);
    expect(error.message).toBe('the decompressed request body is larger than the 1000-byte limit');
  });

  it('stops a deflate bomb (no size trailer) once its output passes the limit, holding no more than the limit', async () => {
    const bomb = deflateSync(Buffer.alloc(64 << 20), { level: 9 }); // 64 MiB of zeros in ~64 KiB
    const heapBefore = process.memoryUsage().arrayBuffers;
    const error = await asyncErrorOf(decodeContentEncoding(bomb, 'deflate', 1 << 20));
    expect((error as HttpStatusError).statusCode).toBe(413);
    // Nowhere near the 64 MiB the bomb expands to: at most the limit plus a few chunks were held.
    expect(process.memoryUsage().arrayBuffers - heapBefore).toBeLessThan(24 << 20);
  });

  it('refuses a gzip body whose trailer declares more than the limit, and counts concatenated members', async () => {
    const declared = await asyncErrorOf(decodeContentEncoding(gzipSync(Buffer.alloc(4096)), 'gzip', 4095));
    expect((declared as HttpStatusError).statusCode).toBe(413);
    // Two members of 3000 bytes: each trailer is under the limit, the sum is not.
    const twoMembers = Buffer.concat([gzipSync(Buffer.alloc(3000)), gzipSync(Buffer.alloc(3000))]);
    expect(((await asyncErrorOf(decodeContentEncoding(twoMembers, 'gzip', 5000))) as HttpStatusError).statusCode).toBe(413);
    expect((await decodeContentEncoding(twoMembers, 'gzip', 6000)).byteLength).toBe(6000);
  });
});

describe('response compression', () => {
  it("picks the client's first acceptable of gzip and deflate", () => {
    expect(chooseResponseCoding(undefined)).toBeUndefined();
    expect(chooseResponseCoding('gzip')).toBe('gzip');
    expect(chooseResponseCoding('deflate')).toBe('deflate');
    expect(chooseResponseCoding('br, deflate, gzip')).toBe('deflate');
    expect(chooseResponseCoding('gzip;q=0, deflate;q=0.5')).toBe('deflate');
    expect(chooseResponseCoding('identity, br')).toBeUndefined();
    expect(chooseResponseCoding(['br', 'GZIP'])).toBe('gzip');
  });

  it('compresses in the chosen coding', async () => {
    expect(gunzipSync(await compress(payload, 'gzip')).equals(payload)).toBe(true);
    expect(inflateSync(await compress(payload.toString(), 'deflate')).equals(payload)).toBe(true);
  });
});

describe('client disconnects', () => {
  it('abort the signal when the client goes away before the answer, not after it', async () => {
    const signals: AbortSignal[] = [];
    let release: () => void = () => {};
    const server = createServer((req, res) => {
      signals.push(abortOnDisconnect(res));
      if (req.url === '/slow') release = () => res.end('late');
      else res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      await new Promise<void>((resolve, reject) => {
        httpRequest({ port, host: '127.0.0.1', path: '/fast' }, (res) => res.resume().on('end', resolve))
          .on('error', reject)
          .end();
      });
      const client = httpRequest({ port, host: '127.0.0.1', path: '/slow' });
      client.on('error', () => {});
      client.end();
      await waitFor(() => signals.length === 2);
      client.destroy();
      await waitFor(() => signals[1]!.aborted);
      expect(signals[0]!.aborted).toBe(false);
      expect(signals[1]!.reason).toBeInstanceOf(ConveyorError);
      expect((signals[1]!.reason as ConveyorError).code).toBe('CANCELLED');
      release();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  await vi.waitFor(() => expect(condition()).toBe(true), { timeout: 15_000, interval: 5 });
}
