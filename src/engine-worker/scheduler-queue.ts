// Ordering policy for the scheduler, behind one small interface chosen by a factory, so the
// scheduler never branches on the policy name.
//   fcfs      first come, first served; a preempted request goes back to the very front.
//   priority  lower `priority` first, then arrival; a preempted request re-enters by that key,
//             which puts it ahead of every later arrival of its priority.
// The same order ranks running requests: the last one is the preemption victim.

import type { SchedulingPolicy } from '../contracts/generate.js';
import type { RequestState } from './request-state.js';

export type { SchedulingPolicy };

export interface WaitingQueue extends Iterable<RequestState> {
  readonly length: number;
  peek(): RequestState | undefined;
  shift(): RequestState | undefined;
  /** A newly submitted request. */
  add(state: RequestState): void;
  /** A request that was running and lost its blocks. */
  requeuePreempted(state: RequestState): void;
  remove(state: RequestState): boolean;
}

export type RequestOrder = (a: RequestState, b: RequestState) => number;

const byArrival: RequestOrder = (a, b) => a.arrivalTimeMs - b.arrivalTimeMs || a.sequence - b.sequence;
const byPriority: RequestOrder = (a, b) => a.request.priority - b.request.priority || byArrival(a, b);

export function requestOrder(policy: SchedulingPolicy): RequestOrder {
  return policy === 'priority' ? byPriority : byArrival;
}

/** Inserts `state` after every element that does not sort after it (stable for equal keys). */
export function insertOrdered(items: (RequestState | undefined)[], state: RequestState, order: RequestOrder, from = 0): void {
  let lo = from;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (order(items[mid]!, state) <= 0) lo = mid + 1;
    else hi = mid;
  }
  items.splice(lo, 0, state);
}

/** An array with a moving head, so taking from the front is O(1) amortized instead of Array.shift's O(n). */
class Deque implements WaitingQueue {
  /** Slots before `head` are consumed (undefined) until the next compaction. */
  private items: (RequestState | undefined)[] = [];
  private head = 0;

  constructor(private readonly order: RequestOrder | null) {}

  get length(): number {
    return this.items.length - this.head;
  }

  peek(): RequestState | undefined {
    return this.items[this.head];
  }

  shift(): RequestState | undefined {
    const state = this.items[this.head];
    if (state === undefined) return undefined;
    this.items[this.head++] = undefined;
    if (this.head > 64 && this.head * 2 > this.items.length) this.compact();
    return state;
  }

  add(state: RequestState): void {
    if (this.order) insertOrdered(this.items, state, this.order, this.head);
    else this.items.push(state);
  }

  requeuePreempted(state: RequestState): void {
    if (this.order) insertOrdered(this.items, state, this.order, this.head);
    else if (this.head > 0) this.items[--this.head] = state;
    else this.items.unshift(state);
  }

  remove(state: RequestState): boolean {
    const index = this.items.indexOf(state, this.head);
    if (index < 0) return false;
    if (index === this.head) this.shift();
    else this.items.splice(index, 1);
    return true;
  }

  *[Symbol.iterator](): Iterator<RequestState> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i]!;
  }

  private compact(): void {
    this.items = this.items.slice(this.head);
    this.head = 0;
  }
}

export function createWaitingQueue(policy: SchedulingPolicy): WaitingQueue {
  return new Deque(policy === 'priority' ? byPriority : null);
}
