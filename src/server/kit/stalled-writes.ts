// Writes to a streaming HTTP response (SSE) with flow control and a send timeout. A slow reader
// holds the stream back (the write waits for 'drain') instead of growing the process's memory;
// a reader that takes nothing for `stallTimeoutMs` while output waits is dropped: its socket is
// destroyed, so the route sees a closed client and aborts the generation behind it. Without the
// timeout, a client that never reads would hold its generation, and every unload and shutdown
// waiting for it, forever.

import type { ServerResponse } from 'node:http';

/** Writes `frame`; resolves once the socket took it, the client went away, or the client was dropped for stalling. */
export function writeOrDrop(response: ServerResponse, frame: string, stallTimeoutMs: number): Promise<void> {
  if (response.destroyed || response.writableEnded) return Promise.resolve();
  if (response.write(frame)) return Promise.resolve();
  return new Promise((resolve) => {
    const settle = (): void => {
      clearTimeout(timer);
      response.off('drain', settle);
      response.off('close', settle);
      resolve();
    };
    const timer = setTimeout(() => {
      settle();
      response.destroy(new Error(`the client read nothing for ${stallTimeoutMs} ms`));
    }, stallTimeoutMs);
    timer.unref();
    response.on('drain', settle);
    response.on('close', settle);
  });
}
