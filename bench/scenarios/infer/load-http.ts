// HTTP load through autocannon: one keep-alive connection per unit of concurrency, one request
// outstanding on each (no pipelining), every request the same binary-extension body. autocannon's
// own summary covers its whole run; the window counts from its per-response events instead.

import { createRequire } from 'node:module';
import type { HttpBinaryRequest } from './payloads.js';
import type { LoadDriver } from './window.js';

interface AutocannonInstance {
  on(event: 'response', listener: (client: unknown, statusCode: number, bytes: number, responseTimeMs: number) => void): void;
  on(event: 'reqError', listener: (error: Error) => void): void;
  stop(): void;
}

type Autocannon = (options: Record<string, unknown>, done: (error: Error | null) => void) => AutocannonInstance;

// autocannon ships CommonJS without type declarations; this is the slice of it used here.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/** Long enough never to end on its own: the window stops it. */
const RUN_FOREVER_S = 24 * 3600;

export function httpDriver(url: string, request: HttpBinaryRequest, timeoutS = 60): LoadDriver {
  return (concurrency, onResponse) => {
    let stopped = false;
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const instance = autocannon(
      {
        url,
        method: 'POST',
        body: request.body,
        headers: request.headers,
        connections: concurrency,
        pipelining: 1,
        duration: RUN_FOREVER_S,
        timeout: timeoutS,
        // autocannon only notices stop() on its sampling tick.
        sampleInt: 50,
      },
      () => finish(),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      if (!stopped) onResponse(responseTimeMs, statusCode === 200 ? undefined : `HTTP ${statusCode}`);
    });
    instance.on('reqError', (error) => {
      if (!stopped) onResponse(NaN, error.message);
    });
    return {
      stop: async () => {
        stopped = true;
        instance.stop();
        await finished;
      },
    };
  };
}
