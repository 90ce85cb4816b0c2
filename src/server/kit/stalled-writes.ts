// Writes to a streaming HTTP response (SSE) with flow control and a send timeout. A slow reader
// holds the stream back (the write waits for 'drain') instead of growing the process's memory;
// a reader that takes nothing for `stallTimeoutMs` while output waits is dropped: its socket is
// destroyed, so the route sees a closed client and aborts the generation behind it. Without the
// timeout, a client that never reads would hold its generation, and every unload and shutdown
// waiting for it, forever.
//
// While the model a stream serves is going (unload, sleep, a precision swap, the drain: its
// `closing` signal), the wait is bounded more tightly, by --undelivered-output-timeout-secs
// counted from the later of the close and the start of the wait, whatever the send timeout: the
// client is dropped and the model goes without waiting for it. The WebSocket front end and the
// gRPC streams (kit/grpc/flow-control.ts) bound their own waits the same way with waitOrGiveUp.
//
// A client dropped so is told why in its protocol's shape where that can still reach it: its
// last words (an SSE error event, a WebSocket close frame, a gRPC status) are queued behind what
// it has not read, and the connection or stream is cut FAREWELL_GRACE_MS later unless it took
// them, so one that never reads again costs the server nothing past the bound and the grace.

import type { ServerResponse } from 'node:http';
import { type ConveyorError, unavailable } from '../../errors.js';

/**
 * How long a client dropped while its model goes has to take its last words (the protocol's
 * error, a close frame) before its connection or stream is cut.
 */
export const FAREWELL_GRACE_MS = 1000;

/** The model a stream serves, as far as its writes care (an LlmModel). */
export interface ClosingModel {
  readonly name: string;
  /** Aborted when the model begins to unload, sleep or swap, or the server drains. */
  readonly closing: AbortSignal;
  /** How long a client that reads nothing may hold output once `closing` has fired. */
  readonly undeliveredOutputTimeoutMs: number;
}

/** Why a client that did not read was dropped while `model` was going. */
export function undeliveredReason(model: ClosingModel): string {
  return `model '${model.name}' is unloading and this client read nothing for ${model.undeliveredOutputTimeoutMs / 1000} s`;
}

/** The error a client dropped while `model` was going is told, in its protocol's shape. */
export function undeliveredError(model: ClosingModel): ConveyorError {
  return unavailable(`${undeliveredReason(model)}; retry the request`);
}

/**
 * Resolves true once `wait` settles; false when `model` began closing and its bound passed
 * first (counted from the later of the close and this call): the caller drops the client.
 */
export function waitOrGiveUp(wait: Promise<void>, model: ClosingModel | undefined): Promise<boolean> {
  if (model === undefined) return wait.then(() => true);
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      timer = setTimeout(() => settle(false), model.undeliveredOutputTimeoutMs);
    };
    const settle = (took: boolean): void => {
      clearTimeout(timer);
      model.closing.removeEventListener('abort', arm);
      resolve(took);
    };
    if (model.closing.aborted) arm();
    else model.closing.addEventListener('abort', arm, { once: true });
    wait.then(
      () => settle(true),
      () => settle(true),
    );
  });
}

/**
 * Writes `frame`; resolves once the socket took it, the client went away, or the client was
 * dropped for stalling (the send timeout, or the bound while `model` is closing). Dropped while
 * `model` closes, the response ends with `farewell(error)` (the protocol's error, queued behind
 * what the client has not read) and is cut FAREWELL_GRACE_MS later; without one it is cut at once.
 */
export function writeOrDrop(response: ServerResponse, frame: string, stallTimeoutMs: number, model?: ClosingModel, farewell?: (error: ConveyorError) => string): Promise<void> {
  if (response.destroyed || response.writableEnded) return Promise.resolve();
  if (response.write(frame)) return Promise.resolve();
  let settle = (): void => {};
  const drained = new Promise<void>((resolve) => {
    settle = (): void => {
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
  if (model === undefined) return drained;
  return waitOrGiveUp(drained, model).then((took) => {
    if (took) return;
    settle();
    if (farewell === undefined) response.destroy(new Error(undeliveredReason(model)));
    else endWithFarewell(response, farewell(undeliveredError(model)), undeliveredReason(model));
  });
}

/** Ends `response` with `last` (behind what the client has not read) and cuts it if the client has not taken it within the grace. */
function endWithFarewell(response: ServerResponse, last: string, reason: string): void {
  if (response.destroyed || response.writableEnded) return;
  response.end(last);
  const cut = setTimeout(() => response.destroy(new Error(reason)), FAREWELL_GRACE_MS);
  cut.unref();
  response.once('close', () => clearTimeout(cut));
}
