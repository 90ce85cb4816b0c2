// The WebSocket outbox's flow control without a socket: producers wait while unflushed bytes are
// over the high-water mark, resume at half of it, and never wait on a closed socket; a client that
// stops reading is reported stalled after the timeout without flush progress or past the byte cap.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Outbox, type SendingSocket } from '../../../../src/server/websocket/outbox.js';

class FakeSocket implements SendingSocket {
  readyState = 1;
  readonly callbacks: ((error?: Error) => void)[] = [];
  send(_data: string, callback: (error?: Error) => void): void {
    this.callbacks.push(callback);
  }
  /** The network takes the oldest frame. */
  flush(): void {
    this.callbacks.shift()?.();
  }
}

const settled = async (promise: Promise<void>): Promise<boolean> => {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

const limits = (highWaterBytes: number, maxBufferedBytes = 1e9, stallTimeoutMs = 1e9) => ({ highWaterBytes, maxBufferedBytes, stallTimeoutMs });

describe('Outbox', () => {
  afterEach(() => vi.useRealTimers());

  it('pauses producers above the high-water mark and resumes them once half is flushed', async () => {
    const socket = new FakeSocket();
    const outbox = new Outbox(socket, limits(100));
    const frame = { text: 'x'.repeat(40) }; // 51 bytes of JSON
    outbox.send(frame);
    expect(await settled(outbox.ready())).toBe(true);
    outbox.send(frame);
    outbox.send(frame);
    expect(outbox.pendingBytes).toBe(153);
    const waiting = outbox.ready();
    expect(await settled(waiting)).toBe(false);
    socket.flush(); // 102 left: still over the mark
    expect(await settled(waiting)).toBe(false);
    socket.flush(); // 51 left: not yet down to half of it
    expect(await settled(waiting)).toBe(false);
    socket.flush();
    expect(await settled(waiting)).toBe(true);
    expect(outbox.pendingBytes).toBe(0);
  });

  it('never keeps a producer waiting on a closed socket', async () => {
    const socket = new FakeSocket();
    const outbox = new Outbox(socket, limits(10));
    outbox.send({ big: 'y'.repeat(100) });
    const waiting = outbox.ready();
    socket.readyState = 3;
    outbox.close();
    expect(await settled(waiting)).toBe(true);
    expect(await settled(outbox.ready())).toBe(true);
    outbox.send({ dropped: true });
    expect(socket.callbacks).toHaveLength(1);
  });

  it('reports falling behind and catching up, and a client that reads nothing for the timeout as stalled', () => {
    vi.useFakeTimers();
    const socket = new FakeSocket();
    const events: string[] = [];
    const outbox = new Outbox(socket, limits(100, 1e9, 1000), {
      onBehind: () => events.push('behind'),
      onCaughtUp: () => events.push('caught up'),
      onStalled: (reason) => events.push(`stalled: ${reason}`),
    });
    const frame = { text: 'x'.repeat(40) }; // 51 bytes
    outbox.send(frame);
    outbox.send(frame);
    expect(events).toEqual(['behind']);
    vi.advanceTimersByTime(900);
    socket.flush(); // progress restarts the clock
    vi.advanceTimersByTime(900);
    expect(events).toEqual(['behind']);
    socket.flush();
    expect(events).toEqual(['behind', 'caught up']);
    outbox.send(frame);
    outbox.send(frame);
    vi.advanceTimersByTime(1000);
    expect(events).toEqual(['behind', 'caught up', 'behind', 'stalled: nothing read for 1000 ms']);
    // A stalled outbox sends nothing more and keeps no producer waiting.
    outbox.send(frame);
    expect(socket.callbacks).toHaveLength(2);
    expect(outbox.open).toBe(false);
  });

  it('reports a client past the byte cap as stalled at once, error replies counted like any frame', () => {
    const socket = new FakeSocket();
    const stalled: string[] = [];
    const outbox = new Outbox(socket, limits(100, 300), { onStalled: (reason) => stalled.push(reason) });
    for (let i = 0; i < 10; i++) outbox.send({ type: 'error', error: { message: 'x'.repeat(40) } });
    expect(stalled).toEqual(['more than 300 bytes unread']);
    expect(socket.callbacks.length).toBeLessThan(10);
  });
});
