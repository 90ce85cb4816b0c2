// Anthropic's server-sent events: every event is named (`event: <type>`) and its data carries the
// same `type`, as Anthropic's SDKs read them; there is no `[DONE]` terminator (message_stop ends
// the stream). Writes wait for the socket as the OpenAI stream's do (stalled-writes.ts), so a
// slow reader holds the generation back and one that reads nothing is dropped.

import type { ServerResponse } from 'node:http';
import { DEFAULT_LIMITS } from '../src/config/limits.js';
import { writeOrDrop } from '../src/server/http/stalled-writes.js';

export interface NamedEvent {
  readonly type: string;
}

export class NamedEventWriter {
  private closed = false;

  constructor(
    private readonly response: ServerResponse,
    private readonly stallTimeoutMs = DEFAULT_LIMITS.streamSendTimeoutSecs * 1000,
  ) {
    response.once('close', () => (this.closed = true));
  }

  open(extra: Readonly<Record<string, string | number | string[]>>): void {
    this.response.writeHead(200, {
      ...extra,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    this.response.flushHeaders();
  }

  get isClosed(): boolean {
    return this.closed || this.response.destroyed;
  }

  send<E extends NamedEvent>(event: E): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    return writeOrDrop(this.response, `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`, this.stallTimeoutMs);
  }

  end(): void {
    if (!this.isClosed && !this.response.writableEnded) this.response.end();
  }
}
