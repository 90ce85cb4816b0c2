// Server-Sent Events on a raw Node response, with flow control: send() waits while the socket's
// buffer is over its high-water mark, so a slow reader pauses the producer instead of growing
// the process's memory; one that reads nothing for the send timeout is dropped.

import type { ServerResponse } from 'node:http';
import { DEFAULT_LIMITS } from '../../../config/limits.js';
import { writeOrDrop } from '../stalled-writes.js';

export class SseWriter {
  constructor(
    private readonly response: ServerResponse,
    private readonly stallTimeoutMs = DEFAULT_LIMITS.streamSendTimeoutSecs * 1000,
  ) {}

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
    await writeOrDrop(this.response, `data: ${JSON.stringify(value)}\n\n`, this.stallTimeoutMs);
  }

  end(): void {
    if (this.open) this.response.end();
  }
}
