// Server-sent events written by hand on the raw response, for every front end that streams over
// HTTP (OpenAI, Responses, Anthropic, Triton's generate_stream): `data: <json>\n\n` per event
// (`event: <name>` before it where the protocol names its events), each written (hence flushed;
// Node sockets default to no Nagle delay) as soon as it exists. Writes wait for the socket to
// drain so a slow reader holds back the event stream instead of growing the socket buffer; one
// that reads nothing for the send timeout (or, while its model is going, for
// --undelivered-output-timeout-secs) is dropped (stalled-writes.ts). How a stream ends is
// the protocol's: OpenAI's SDKs expect `data: [DONE]` (done(), DONE_EVENT), the others just end().
// A stream dropped while its model goes ends with the front end's `farewell`: the protocol's error
// events, the same ones it sends for any failure after the stream opened (OpenAI's chat and
// completions: `data: {"error": …}` then `data: [DONE]`).
//
// Keep-alive (--sse-keep-alive-interval, vLLM's flag and comment): a stream that has sent nothing
// for the interval, while its request waits in the queue, in prefill or between events, gets an
// SSE comment, `: keep-alive`, which every SSE parser skips, so proxies with an idle timeout do
// not cut it. A stream is opened (its 200 fixed) by its first event or its first keep-alive,
// whichever comes first: a request refused quickly still gets its plain HTTP error.

import type { ServerResponse } from 'node:http';
import { DEFAULT_LIMITS } from '../../config/limits.js';
import type { ConveyorError } from '../../errors.js';
import { type ClosingModel, writeOrDrop } from './stalled-writes.js';

/**
 * One event: `event: <name>` when the protocol names its events, then its JSON data; or a data
 * line written as it is (OpenAI's `[DONE]`, which is not JSON).
 */
export type SseEvent = { readonly name?: string; readonly payload: unknown } | { readonly data: string };

/** OpenAI's terminating event. */
export const DONE_EVENT: SseEvent = { data: '[DONE]' };

/** The events that end a stream with `error`, in the front end's protocol. */
export type SseFarewell = (error: ConveyorError) => readonly SseEvent[];

/** vLLM's keep-alive: an SSE comment line, ignored by every parser. */
export const KEEP_ALIVE_FRAME = ': keep-alive\n\n';

function frameOf(event: SseEvent): string {
  if ('data' in event) return `data: ${event.data}\n\n`;
  return `${event.name === undefined ? '' : `event: ${event.name}\n`}data: ${JSON.stringify(event.payload)}\n\n`;
}

export class SseWriter {
  private closed = false;
  private opened = false;
  private keepAliveTimer: NodeJS.Timeout | undefined;
  private keepAliveMs = 0;
  private openForKeepAlive: (() => void) | undefined;

  /**
   * `model`: the one the stream serves; while it is going, a client that reads nothing is dropped
   * sooner (stalled-writes.ts), told why by `farewell` (the protocol's error events) when given.
   */
  constructor(
    private readonly response: ServerResponse,
    private readonly stallTimeoutMs = DEFAULT_LIMITS.streamSendTimeoutSecs * 1000,
    private readonly model?: ClosingModel,
    private readonly farewell?: SseFarewell,
  ) {
    response.once('close', () => {
      this.closed = true;
      clearTimeout(this.keepAliveTimer);
    });
  }

  /**
   * From now on, a silence of `intervalMs` (0: never) is filled with a keep-alive comment; `open`
   * opens the stream the route's way (its headers, a fastify hijack) if the first one comes before
   * the first event.
   */
  keepAlive(intervalMs: number, open: () => void): void {
    this.keepAliveMs = intervalMs;
    this.openForKeepAlive = open;
    this.armKeepAlive();
  }

  /** Sends the status line and headers, fixing the 200 before the first event; `extra` carries CORS and request-id headers. Once only: later calls do nothing. */
  open(extra: Readonly<Record<string, string | number | string[]>> = {}): void {
    if (this.opened) return;
    this.opened = true;
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

  /** True once the status line and headers went out (by open(), maybe through a keep-alive). */
  get isOpen(): boolean {
    return this.opened;
  }

  /** True once the client went away or the stream ended; further writes are dropped. */
  get isClosed(): boolean {
    return this.closed || this.response.destroyed || this.response.writableEnded;
  }

  /** One event carrying `payload` as JSON. */
  send(payload: unknown): Promise<void> {
    return this.write(frameOf({ payload }));
  }

  /** A named event (`event: <name>`), as the Responses and Messages APIs stream them. */
  sendEvent(name: string, payload: unknown): Promise<void> {
    return this.write(frameOf({ name, payload }));
  }

  /** Each of `events` in turn. */
  async sendAll(events: readonly SseEvent[]): Promise<void> {
    for (const event of events) await this.write(frameOf(event));
  }

  /** OpenAI's terminating event, then the end of the response. */
  async done(): Promise<void> {
    await this.write(frameOf(DONE_EVENT));
    this.end();
  }

  /** Ends the stream; before it opened, only stops the keep-alive (the route answers otherwise). */
  end(): void {
    clearTimeout(this.keepAliveTimer);
    if (this.opened && !this.isClosed) this.response.end();
  }

  private armKeepAlive(): void {
    clearTimeout(this.keepAliveTimer);
    if (this.keepAliveMs <= 0 || this.isClosed) return;
    this.keepAliveTimer = setTimeout(() => this.sendKeepAlive(), this.keepAliveMs);
    // A pending keep-alive must not hold the process open on its own.
    this.keepAliveTimer.unref();
  }

  private sendKeepAlive(): void {
    if (this.isClosed) return;
    if (!this.opened) this.openForKeepAlive?.();
    // Output still queued for a slow reader already keeps the connection busy; the stall bound is the writes' business.
    if (this.response.writableLength === 0) this.response.write(KEEP_ALIVE_FRAME);
    this.armKeepAlive();
  }

  private write(frame: string): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    this.armKeepAlive();
    const farewell = this.farewell;
    return writeOrDrop(this.response, frame, this.stallTimeoutMs, this.model, farewell && ((error) => farewell(error).map(frameOf).join('')));
  }
}
