// The WebSocket outbox's flow control without a socket: producers wait while unflushed bytes are
// over the high-water mark, resume at half of it, and never wait on a closed socket.
import { describe, expect, it } from 'vitest';
import { Outbox, type SendingSocket } from '../../../../src/server/http/websocket/outbox.js';

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

describe('Outbox', () => {
  it('pauses producers above the high-water mark and resumes them once half is flushed', async () => {
    const socket = new FakeSocket();
    const outbox = new Outbox(socket, 100);
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
    const outbox = new Outbox(socket, 10);
    outbox.send({ big: 'y'.repeat(100) });
    const waiting = outbox.ready();
    socket.readyState = 3;
    outbox.close();
    expect(await settled(waiting)).toBe(true);
    expect(await settled(outbox.ready())).toBe(true);
    outbox.send({ dropped: true });
    expect(socket.callbacks).toHaveLength(1);
  });
});
