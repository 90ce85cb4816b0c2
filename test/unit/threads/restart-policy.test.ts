// The supervision policy as a pure function, and the supervisor shell driven by a fake clock
// and hand-fired timers: backoff doubling, the cap, forgetting old crashes, the crash loop.
import { describe, expect, it } from 'vitest';
import { backoffMs, DEFAULT_RESTART_POLICY, recordCrash, type RestartPolicy } from '../../../src/threads/restart-policy.js';
import { WorkerSupervisor } from '../../../src/threads/worker-supervisor.js';
import { faultInjectionOf, FaultPoint, parseFaultInjection, parseWorkerFaultOf } from '../../../src/threads/fault-injection.js';
import { modelConfig } from '../../support/model-config.js';

const policy: RestartPolicy = { initialBackoffMs: 500, backoffFactor: 2, maxBackoffMs: 3000, maxCrashesInWindow: 6, windowMs: 60_000 };

describe('recordCrash', () => {
  it('doubles the delay with each crash inside the window, up to the cap', () => {
    let history: readonly number[] = [];
    const delays: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const { crashTimesMs, decision } = recordCrash(policy, history, 1000 + i * 100);
      history = crashTimesMs;
      expect(decision.kind).toBe('restart');
      if (decision.kind === 'restart') delays.push(decision.delayMs);
    }
    expect(delays).toEqual([500, 1000, 2000, 3000, 3000]);
  });

  it('gives up at the Nth crash within the window, naming the count and the window', () => {
    const history = [0, 10, 20, 30, 40];
    const { decision } = recordCrash(policy, history, 50);
    expect(decision).toEqual({ kind: 'give_up', crashesInWindow: 6, reason: 'crash loop: 6 crashes within 60 s' });
  });

  it('forgets crashes older than the window, so the backoff starts over', () => {
    const { crashTimesMs, decision } = recordCrash(policy, [0, 10, 20, 30, 40], 60_040);
    expect(crashTimesMs).toEqual([60_040]);
    expect(decision).toEqual({ kind: 'restart', delayMs: 500, crashesInWindow: 1 });
  });

  it('keeps crashes exactly inside the window edge', () => {
    expect(recordCrash(policy, [1], 60_000).crashTimesMs).toEqual([1, 60_000]);
    expect(recordCrash(policy, [0], 60_000).crashTimesMs).toEqual([60_000]);
  });

  it('defaults: 0.5 s, 1 s, 2 s, 4 s, then the 5th crash within a minute is a loop', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(DEFAULT_RESTART_POLICY, n))).toEqual([500, 1000, 2000, 4000]);
    expect(recordCrash(DEFAULT_RESTART_POLICY, [0, 1, 2, 3], 4).decision.kind).toBe('give_up');
  });
});

/** Timers fired by hand: the test decides when "later" is. */
class ManualTimers {
  readonly pending = new Map<number, { callback: () => void; delayMs: number }>();
  private next = 1;
  set = (callback: () => void, delayMs: number): unknown => {
    const id = this.next++;
    this.pending.set(id, { callback, delayMs });
    return id;
  };
  clear = (handle: unknown): void => void this.pending.delete(handle as number);
  fireAll(): number[] {
    const due = [...this.pending.entries()];
    this.pending.clear();
    for (const [, t] of due) t.callback();
    return due.map(([, t]) => t.delayMs);
  }
}

const settle = () => new Promise((r) => setImmediate(r));

function supervisor(numWorkers: number, respawn: (slot: number) => Promise<void>) {
  let now = 0;
  const timers = new ManualTimers();
  const logs: string[] = [];
  const gaveUp: string[] = [];
  const s = new WorkerSupervisor({
    label: 'm:1 instance',
    numWorkers,
    respawn,
    log: (l) => logs.push(l),
    onGiveUp: (r) => gaveUp.push(r),
    policy: { ...policy, maxCrashesInWindow: 3 },
    clock: () => now,
    timers,
  });
  return { s, timers, logs, gaveUp, advance: (ms: number) => (now += ms) };
}

describe('WorkerSupervisor', () => {
  it('is not ready from the crash until the respawn succeeds, then counts the restart', async () => {
    const respawned: number[] = [];
    const { s, timers } = supervisor(1, async (slot) => void respawned.push(slot));
    expect(s.status()).toEqual({ ready: true, state: 'READY', reason: '', restarts: 0 });
    s.crashed(0, 'worker exited with code 70');
    expect(s.status()).toMatchObject({ ready: false, state: 'UNAVAILABLE', reason: 'restarting after a crash: worker exited with code 70' });
    expect(timers.fireAll()).toEqual([500]);
    await settle();
    expect(respawned).toEqual([0]);
    expect(s.status()).toEqual({ ready: true, state: 'READY', reason: '', restarts: 1 });
  });

  it('stays ready while only some instances are down, and says so', () => {
    const { s } = supervisor(2, async () => {});
    s.crashed(1, 'boom');
    expect(s.status()).toMatchObject({ ready: true, state: 'READY', reason: '1 of 2 workers restarting after a crash: boom' });
  });

  it('counts a failed respawn as another crash, with a longer delay', async () => {
    let attempts = 0;
    const { s, timers } = supervisor(1, async () => {
      attempts += 1;
      if (attempts === 1) throw new Error('session failed');
    });
    s.crashed(0, 'boom');
    expect(timers.fireAll()).toEqual([500]);
    await settle();
    expect(s.status().reason).toBe('restarting after a crash: restart failed: session failed');
    expect(timers.fireAll()).toEqual([1000]);
    await settle();
    expect(s.status()).toMatchObject({ ready: true, restarts: 1 });
  });

  it('declares a crash loop: UNAVAILABLE with the reason, no more restarts, the owner told once', async () => {
    const { s, timers, gaveUp, advance } = supervisor(1, async () => {});
    for (let i = 0; i < 2; i += 1) {
      s.crashed(0, `crash ${i}`);
      timers.fireAll();
      await settle();
      advance(100);
    }
    s.crashed(0, 'crash 2');
    expect(timers.pending.size).toBe(0);
    expect(s.gaveUp).toBe(true);
    const reason = 'crash loop: 3 crashes within 60 s (last: crash 2); load the model again to retry';
    expect(s.status()).toEqual({ ready: false, state: 'UNAVAILABLE', reason, restarts: 2 });
    expect(gaveUp).toEqual([reason]);
    s.crashed(0, 'again');
    expect(gaveUp).toHaveLength(1);
  });

  it('restarts nothing once stopped (the version is closing)', async () => {
    const respawned: number[] = [];
    const { s, timers } = supervisor(1, async (slot) => void respawned.push(slot));
    s.crashed(0, 'boom');
    s.stop();
    expect(timers.pending.size).toBe(0);
    s.crashed(0, 'late');
    expect(timers.pending.size).toBe(0);
    expect(respawned).toEqual([]);
  });
});

describe('fault injection (test-only)', () => {
  const config = (spec: string, backend = 'llm') => modelConfig({ backend, parameters: { fault_injection: { string_value: spec } } });

  it('parses the four forms and refuses anything else', () => {
    expect(parseFaultInjection('throw_at_step:5')).toEqual({ action: 'throw', at: 'step', count: 5 });
    expect(parseFaultInjection('exit_at_execution:1')).toEqual({ action: 'exit', at: 'execution', count: 1 });
    for (const bad of ['throw_at_step:0', 'throw_at_step', 'crash_at_step:1', 'throw_at_step:-1', 'exit_at_step:1.5']) {
      expect(() => parseFaultInjection(bad), bad).toThrow(/must be <throw\|exit>_at_<step\|draft_pass\|execution\|job>:<N>/);
    }
  });

  it('is ignored with a warning unless CONVEYOR_FAULT_INJECTION=1, and logged loudly when honoured', () => {
    const logs: string[] = [];
    expect(faultInjectionOf(config('throw_at_step:2'), ['step', 'draft_pass'], (l) => logs.push(l), {})).toBeUndefined();
    expect(faultInjectionOf(config('throw_at_step:2'), ['step', 'draft_pass'], (l) => logs.push(l), { CONVEYOR_FAULT_INJECTION: 'true' })).toBeUndefined();
    expect(faultInjectionOf(config('throw_at_step:2'), ['step', 'draft_pass'], (l) => logs.push(l), { CONVEYOR_FAULT_INJECTION: '1' })).toEqual({ action: 'throw', at: 'step', count: 2 });
    expect(logs[0]).toMatch(/ignored \(test-only/);
    expect(logs.at(-1)).toMatch(/TEST-ONLY FAULT INJECTION ACTIVE/);
  });

  it("refuses the other backend's counter", () => {
    expect(() => faultInjectionOf(config('throw_at_execution:2'), ['step', 'draft_pass'], () => {}, { CONVEYOR_FAULT_INJECTION: '1' })).toThrow(/counts steps or draft passes, not executions/);
    expect(faultInjectionOf(config('exit_at_draft_pass:7'), ['step', 'draft_pass'], () => {}, { CONVEYOR_FAULT_INJECTION: '1' })).toEqual({ action: 'exit', at: 'draft_pass', count: 7 });
  });

  it('throws exactly at the chosen point', () => {
    const point = new FaultPoint({ action: 'throw', at: 'step', count: 3 });
    point.reached();
    point.reached();
    expect(() => point.reached()).toThrow('fault injection: throw at step 3');
    expect(() => new FaultPoint(undefined).reached()).not.toThrow();
  });

  it('gives the parse pool its job from CONVEYOR_PARSE_WORKER_FAULT, under the same switch, and says when it is due', () => {
    const logs: string[] = [];
    const warn = (l: string) => logs.push(l);
    expect(parseWorkerFaultOf(warn, {})).toBeUndefined();
    expect(logs).toEqual([]);
    expect(parseWorkerFaultOf(warn, { CONVEYOR_PARSE_WORKER_FAULT: 'exit_at_job:2' })).toBeUndefined();
    expect(logs.at(-1)).toMatch(/ignored \(test-only/);
    const fault = parseWorkerFaultOf(warn, { CONVEYOR_PARSE_WORKER_FAULT: 'exit_at_job:2', CONVEYOR_FAULT_INJECTION: '1' });
    expect(fault).toEqual({ action: 'exit', at: 'job', count: 2 });
    expect(logs.at(-1)).toMatch(/TEST-ONLY FAULT INJECTION ACTIVE: job 2 will exit/);
    expect(() => parseWorkerFaultOf(warn, { CONVEYOR_PARSE_WORKER_FAULT: 'exit_at_step:2', CONVEYOR_FAULT_INJECTION: '1' })).toThrow(/count jobs, not steps/);
    const point = new FaultPoint(fault);
    expect([point.due(), point.due(), point.due()]).toEqual([undefined, 'exit', undefined]);
  });
});
