// The serving layer's admission: one bound per model on generations waiting for their first token
// (--max-queued-requests) and on their prompt tokens (--max-num-queued-tokens), the neutral
// Overloaded refusal with its wait, seats that give their place back once, and return slots
// promised to shed clients that stop counting once their time has passed (injected clock).
import { describe, expect, it } from 'vitest';
import { Admission, Overloaded, retryAfterHeaders } from '../../../src/serving/admission.js';
import { RetryAfterPolicy } from '../../../src/serving/retry-after.js';

function clocked(limits: ConstructorParameters<typeof Admission>[0]): { admission: Admission; retry: RetryAfterPolicy; clock: { t: number } } {
  const clock = { t: 1000 };
  const retry = new RetryAfterPolicy({ now: () => clock.t, random: () => 0, initialRate: 10 });
  return { admission: new Admission(limits, retry), retry, clock };
}

const shed = (enter: () => unknown): Overloaded => {
  try {
    enter();
  } catch (error) {
    if (error instanceof Overloaded) return error;
    throw error;
  }
  throw new Error('admitted');
};

describe('Admission', () => {
  it('refuses with the neutral Overloaded: UNAVAILABLE, a wait, and its HTTP headers', () => {
    const { admission } = clocked({ maxQueuedRequests: 1 });
    admission.enter('m', 1);
    const error = shed(() => admission.enter('m', 1));
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.retryAfter).toEqual({ seconds: 1, ms: 100 });
    expect(error.message).toMatch(/1 generations for model 'm' are waiting.*limit 1.*Retry after 100 ms/);
    expect(retryAfterHeaders(error)).toEqual({ 'retry-after': '1', 'retry-after-ms': '100' });
    expect(retryAfterHeaders(new Error('other'))).toEqual({});
  });

  it('bounds the waiting prompt tokens (--max-num-queued-tokens), a lone long prompt still admitted', () => {
    const { admission } = clocked({ maxQueuedTokens: 100 });
    admission.enter('m', 1, 500);
    expect(admission.queuedTokensFor('m')).toBe(500);
    const error = shed(() => admission.enter('m', 1, 10));
    expect(error.message).toMatch(/500 prompt tokens waiting for model 'm' and this request's 10 exceed the limit of 100/);
    admission.leave('m', 500);
    expect(admission.queuedTokensFor('m')).toBe(0);
    admission.enter('m', 2, 60);
    expect(() => admission.enter('m', 1, 50)).toThrow(Overloaded);
    expect(() => admission.enter('m', 1, 40)).not.toThrow();
    expect(admission.queuedFor('m')).toBe(3);
  });

  it('waits, under the token bound, for as many generations as must drain at the backlog mean length', () => {
    const { admission } = clocked({ maxQueuedTokens: 100 });
    for (let i = 0; i < 4; i++) admission.enter('m', 1, 25);
    // 100 waiting at 25 each; 50 more must free 50: two generations, 100 ms apart.
    expect(shed(() => admission.enter('m', 1, 50)).retryAfter.ms).toBe(200);
  });

  it('admits n choices together and gives each seat back once', () => {
    const { admission } = clocked({ maxQueuedRequests: 3 });
    const seats = admission.admit('m', [10, 20, 30]);
    expect(admission.queuedFor('m')).toBe(3);
    expect(admission.queuedTokensFor('m')).toBe(60);
    expect(() => admission.admit('m', [1])).toThrow(Overloaded);
    seats[1]!.leave();
    seats[1]!.leave();
    expect(admission.queuedFor('m')).toBe(2);
    expect(admission.queuedTokensFor('m')).toBe(40);
    for (const seat of seats) seat.leave();
    expect(admission.queuedFor('m')).toBe(0);
  });

  it('counts per model: one model full does not shed another', () => {
    const { admission } = clocked({ maxQueuedRequests: 1 });
    admission.enter('a', 1);
    expect(() => admission.enter('b', 1)).not.toThrow();
    expect(() => admission.enter('a', 1)).toThrow(Overloaded);
  });

  it('books shed clients behind each other; a slot whose client never came back stops counting once its time passed', () => {
    const { admission, retry, clock } = clocked({ maxQueuedRequests: 1 });
    admission.enter('m', 1);
    const waits = Array.from({ length: 5 }, () => shed(() => admission.enter('m', 1)).retryAfter.ms);
    expect(waits).toEqual([100, 200, 300, 400, 500]);
    expect(retry.outstanding('m')).toBe(5);
    // Slots are [100, 200), [200, 300) … ms from now: at 350 the first two have passed (their
    // clients did not come back); the three still ahead count.
    clock.t += 350;
    expect(retry.outstanding('m')).toBe(3);
    expect(shed(() => admission.enter('m', 1)).retryAfter.ms).toBe(250);
    // All passed: the next shed client is told the backlog's own drain time, not one behind ghosts.
    clock.t += 10_000;
    expect(retry.outstanding('m')).toBe(0);
    expect(shed(() => admission.enter('m', 1)).retryAfter.ms).toBe(100);
  });
});
