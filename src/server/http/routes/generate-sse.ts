// Server-Sent Events on a raw Node response, with flow control: send() waits while the socket's
// buffer is over its high-water mark, so a slow reader pauses the producer instead of growing
// the process's memory.

import { once } from 'node:events';
import type { ServerResponse } from 'node:http';

export class SseWriter {
  constructor(private readonly response: ServerResponse) {}

  /** False once the client went away (nothing more can be delivered). */
  get open(): boolean {
    return !this.response.destroyed && !this.response.writableEnded;
  }

  /** The status line is fixed here, before the first event. */
  start(): void {
    this.response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
  }

  /** One `data:` event holding a JSON value. */
  async send(value: unknown): Promise<void> {
    if (!this.open) return;
    if (this.response.write(`data: ${JSON.stringify(value)}\n\n`)) return;
    // Whichever comes first; the other listener is removed so waits do not pile up listeners.
    const settled = new AbortController();
    const wait = (event: string) => once(this.response, event, { signal: settled.signal }).catch(() => undefined);
    await Promise.race([wait('drain'), wait('close')]);
    settled.abort();
  }

  end(): void {
    if (this.open) this.response.end();
  }
}
