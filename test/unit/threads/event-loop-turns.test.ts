// EventLoopTurns: jobs run first-in first-out, one per event-loop iteration, so timers and
// sockets get the loop between any two; a job that throws does not stop the rest.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { EventLoopTurns } from '../../../src/threads/event-loop-turns.js';

const busy = (ms: number): void => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe('EventLoopTurns', () => {
  it('runs jobs in order, one per scheduled turn, and schedules only while jobs wait', () => {
    const scheduled: (() => void)[] = [];
    const turns = new EventLoopTurns((run) => scheduled.push(run));
    const ran: number[] = [];
    for (let i = 0; i < 3; i++) turns.run(() => ran.push(i));
    expect(scheduled).toHaveLength(1); // one turn in flight, however many jobs wait
    expect(turns.pending).toBe(3);
    scheduled.shift()!();
    expect(ran).toEqual([0]);
    expect(scheduled).toHaveLength(1);
    scheduled.shift()!();
    scheduled.shift()!();
    expect(ran).toEqual([0, 1, 2]);
    expect(scheduled).toHaveLength(0);
    turns.run(() => ran.push(3));
    expect(scheduled).toHaveLength(1);
  });

  it('goes on after a job that throws', () => {
    const scheduled: (() => void)[] = [];
    const turns = new EventLoopTurns((run) => scheduled.push(run));
    const ran: string[] = [];
    turns.run(() => {
      throw new Error('boom');
    });
    turns.run(() => ran.push('after'));
    expect(() => scheduled.shift()!()).toThrow('boom');
    scheduled.shift()!();
    expect(ran).toEqual(['after']);
  });

  it('lets a timer and a socket in between turns of a long queue', async () => {
    const turns = new EventLoopTurns();
    const server = createServer((socket) => socket.end('pong'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    let done = 0;
    const all = Array.from({ length: 200 }, () =>
      turns.next().then(() => {
        busy(2);
        done++;
      }),
    );
    // Both start while 200 turns of 2 ms (400 ms of work) are queued.
    const timerAt = new Promise<number>((resolve) => setTimeout(() => resolve(done), 0));
    const socketAt = new Promise<number>((resolve, reject) => {
      fetchPong(port).then(() => resolve(done), reject);
    });
    expect(await timerAt).toBeLessThan(20);
    expect(await socketAt).toBeLessThan(100);
    await Promise.all(all);
    expect(done).toBe(200);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});

async function fetchPong(port: number): Promise<void> {
  const { connect } = await import('node:net');
  await new Promise<void>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('data', () => {
      socket.destroy();
      resolve();
    });
    socket.on('error', reject);
  });
}
