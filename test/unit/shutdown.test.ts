// The drain's order of events (src/shutdown.ts) over parts that record what happens to
// them: nothing closes before in-flight work is done or the exit timeout passed, and the exit
// timeout ends the generations still running before the front ends close.
import { describe, expect, it } from 'vitest';
import type { ConveyorError } from '../../src/errors.js';
import { drain, settlesWithin, type DrainParts } from '../../src/shutdown.js';

function parts(unloadAll: () => Promise<void>, onAbort: (reason: ConveyorError) => number = () => 0): { parts: DrainParts; events: string[] } {
  const events: string[] = [];
  return {
    events,
    parts: {
      beginShutdown: () => events.push('not ready'),
      unloadAll: () => {
        events.push('unloading');
        return unloadAll().then(() => void events.push('unloaded'));
      },
      abortInFlight: (reason) => {
        events.push(`abort: ${reason.code}`);
        return onAbort(reason);
      },
      closeFrontEnds: async () => void events.push('front ends closed'),
      closeMetrics: async () => void events.push('metrics closed'),
      log: (line) => events.push(`log: ${line}`),
    },
  };
}

describe('drain', () => {
  it('with nothing in flight: closes as soon as the models unloaded, long before the exit timeout', async () => {
    const { parts: p, events } = parts(async () => undefined);
    expect(await drain(p, 600_000)).toEqual({ finishedInTime: true, aborted: 0 });
    expect(events.filter((e) => !e.startsWith('log:'))).toEqual(['not ready', 'unloading', 'unloaded', 'front ends closed', 'metrics closed']);
  });

  it('readiness goes false before anything else, and the front ends stay open while requests run', async () => {
    let finish!: () => void;
    const { parts: p, events } = parts(() => new Promise<void>((resolve) => (finish = resolve)));
    const drained = drain(p, 600_000);
    expect(events[0]).toBe('not ready');
    await Promise.resolve();
    expect(events).not.toContain('front ends closed');
    finish();
    await drained;
    expect(events.indexOf('unloaded')).toBeLessThan(events.indexOf('front ends closed'));
  });

  it('at the exit timeout ends the running generations with UNAVAILABLE, then closes', async () => {
    let finish!: () => void;
    const unloading = new Promise<void>((resolve) => (finish = resolve));
    const { parts: p, events } = parts(
      () => unloading,
      () => {
        // Aborted generations end, so the unload can complete.
        finish();
        return 2;
      },
    );
    expect(await drain(p, 1)).toEqual({ finishedInTime: false, aborted: 2 });
    const order = events.filter((e) => !e.startsWith('log:'));
    expect(order).toEqual(['not ready', 'unloading', 'abort: UNAVAILABLE', 'unloaded', 'front ends closed', 'metrics closed']);
    expect(events).toContain('log: drain: exit timeout reached; 2 generation(s) still running end with an error event');
  });
});

describe('settlesWithin', () => {
  it('is true for work that settles (even by rejecting) and false for work that does not', async () => {
    expect(await settlesWithin(Promise.resolve(), 600_000)).toBe(true);
    expect(await settlesWithin(Promise.reject(new Error('x')), 600_000)).toBe(true);
    expect(await settlesWithin(new Promise(() => undefined), 1)).toBe(false);
  });
});
