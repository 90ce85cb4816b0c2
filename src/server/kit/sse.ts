// Server-sent events written by hand on the raw response, for every front end that streams over
// HTTP (OpenAI, Responses, Anthropic, Triton's generate_stream): `data: <json>\n\n` per event
// (`event: <name>` before it where the protocol names its events), each written (hence flushed;
// Node sockets default to no Nagle delay) as soon as it exists. Writes wait for the socket to
// drain so a slow reader holds back the event stream instead of growing the socket buffer; one
// that reads nothing for the send timeout (or, while its model is going, for
// --undelivered-output-timeout-secs) is dropped (stalled-writes.ts). How a stream ends is
// the protocol's: OpenAI's SDKs expect `data: [DONE]` (done()), the others just end().

import type { ServerResponse } from 'node:http';
import { DEFAULT_LIMITS } from '../../config/limits.js';
import { type ClosingModel, writeOrDrop } from './stalled-writes.js';

export class SseWriter {
  private closed = false;

  /** `model`: the one the stream serves; while it is going, a client that reads nothing is dropped sooner (stalled-writes.ts). */
  constructor(
    private readonly response: ServerResponse,
    private readonly stallTimeoutMs = DEFAULT_LIMITS.streamSendTimeoutSecs * 1000,
    private readonly model?: ClosingModel,
  ) {
    response.once('close', () => (this.closed = true));
  }

  /** Sends the status line and headers, fixing the 200 before the first event; `extra` carries CORS and request-id headers. */
  open(extra: Readonly<Record<string, string | number | string[]>> = {}): void {
    this.response.writeHead(200, {
      ...extra,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      // Proxies such as nginx buffer responses unless told otherwise.
      'x-accel-buffering': 'no',
    });
    this.response.flushHeaders();
  }

  /** True once the client went away or the stream ended; further writes are dropped. */
  get isClosed(): boolean {
    return this.closed || this.response.destroyed || this.response.writableEnded;
  }

  /** One event carrying `payload` as JSON. */
  send(payload: unknown): Promise<void> {
    return this.write(`data: ${JSON.stringify(payload)}\n\n`);
  }

  /** A named event (`event: <name>`), as the Responses and Messages APIs stream them. */
  sendEvent(name: string, payload: unknown): Promise<void> {
    return this.write(`event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`);
  }

  /** OpenAI's terminating event, then the end of the response. */
  async done(): Promise<void> {
    await this.write('data: [DONE]\n\n');
    this.end();
  }

  end(): void {
    if (!this.isClosed) this.response.end();
  }

  private write(frame: string): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    return writeOrDrop(this.response, frame, this.stallTimeoutMs, this.model);
  }
}
