// Writing to a gRPC server stream at the client's pace, for every gRPC front end that streams
// (KServe ModelStreamInfer, conveyor.v1.GenerationService). grpc-js buffers whatever the client
// has not read; a writer waits for 'drain' rather than growing that buffer. While the model a
// message comes from is going (unload, sleep, a precision swap, the drain), the wait is bounded by
// --undelivered-output-timeout-secs (kit/stalled-writes.ts): the call is then ended with
// UNAVAILABLE, queued behind what the client has not read, and its HTTP/2 stream reset
// FAREWELL_GRACE_MS later if the client has not taken it, so a client that never reads again holds
// neither the model nor the stream.

import { constants as http2, type ServerHttp2Stream } from 'node:http2';
import type { Writable } from 'node:stream';
import { type ClosingModel, FAREWELL_GRACE_MS, undeliveredError, waitOrGiveUp } from '../stalled-writes.js';
import { toGrpcStatusWithDetails } from './status.js';

/** A grpc-js server call that streams responses (server-streaming or bidirectional). */
export type StreamingCall = Writable & { readonly cancelled: boolean };

/** Resolves once `call` takes more (its 'drain'), or it is cancelled, or `stop` aborts. */
export function drainOf(call: StreamingCall, stop?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      call.removeListener('drain', done);
      call.removeListener('cancelled', done);
      stop?.removeEventListener('abort', done);
      resolve();
    };
    call.once('drain', done);
    call.once('cancelled', done);
    stop?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Waits for `drained` (the call's room for more), for at most the bound once `model` is going.
 * Resolves true when the call may go on; false when the client was dropped: the call is ended
 * UNAVAILABLE and cut after the grace, and the caller ends its generations.
 */
export async function awaitRoom(call: StreamingCall, drained: Promise<void>, model: ClosingModel | undefined): Promise<boolean> {
  if (await waitOrGiveUp(drained, model)) return true;
  dropCall(call, model!);
  return false;
}

/** Ends `call` with UNAVAILABLE (the client read nothing while `model` was going), resetting its stream if the status cannot reach the client within the grace. */
function dropCall(call: StreamingCall, model: ClosingModel): void {
  if (call.cancelled) return;
  // grpc-js sends the status once the client has read what is queued before it.
  call.emit('error', toGrpcStatusWithDetails(undeliveredError(model)));
  const stream = http2StreamOf(call);
  if (stream === undefined) return;
  const cut = setTimeout(() => {
    if (!stream.closed) stream.close(http2.NGHTTP2_CANCEL);
  }, FAREWELL_GRACE_MS);
  cut.unref();
  stream.once('close', () => clearTimeout(cut));
}

interface CallChain {
  readonly call?: CallChain;
  readonly nextCall?: CallChain;
  readonly stream?: unknown;
}

/**
 * The call's HTTP/2 stream. grpc-js has no public way to reset one call, so this follows its
 * internals (1.10 to 1.14): the call object holds its intercepting call as `call`, an interceptor
 * the next one as `nextCall`, and the base call the stream as `stream`. Undefined if that changes;
 * the call then ends when the client reads again or the server stops
 * (test/integration/undelivered-output-streams.test.ts would fail first).
 */
function http2StreamOf(call: StreamingCall): ServerHttp2Stream | undefined {
  let at = (call as CallChain).call;
  for (let hops = 0; at !== undefined && hops < 16; hops++) {
    const stream = at.stream as Partial<ServerHttp2Stream> | undefined;
    if (typeof stream?.close === 'function' && typeof stream.closed === 'boolean') return stream as ServerHttp2Stream;
    at = at.nextCall;
  }
  return undefined;
}
