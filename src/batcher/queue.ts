// The batcher's priority queues and Triton's queue policy: which level a request joins, when it
// times out, and the immediate rejection of a full level. Ordering and timeouts at dispatch time
// are decide.ts's business; this file only admits, holds and removes.

import type { Parameters, ParameterValue } from '../contracts/infer.js';
import type { DynamicBatchingConfig, QueuePolicy } from '../contracts/model-config.js';
import { invalidArg, unavailable } from '../errors.js';
import type { PendingEntry } from './decide.js';

/** A queued request: the decision's view plus what the shell needs back. */
export interface QueueEntry<T> extends PendingEntry {
  /** Index into the levels; 0 is priority 1. */
  readonly level: number;
  readonly payload: T;
}

export interface Admission<T> {
  readonly payload: T;
  /** First dimension of the request (0 allowed). */
  readonly batchSize: number;
  readonly signature: string;
  /** The request's parameters: `priority` and `timeout` (µs) are read. */
  readonly parameters: Parameters;
}

const NO_POLICY: QueuePolicy = { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 0 };

/** A non-negative integer request parameter, or undefined when absent. */
function integerParameter(parameters: Parameters, name: string): number | undefined {
  const value: ParameterValue | undefined = parameters[name];
  if (value === undefined) return undefined;
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw invalidArg(`request parameter '${name}' must be a non-negative integer`, name);
  }
  return n;
}

export class RequestQueue<T> {
  private readonly levels: QueueEntry<T>[][];
  private readonly policies: QueuePolicy[];
  private readonly defaultLevel: number;
  private count = 0;

  /** `dynamic` undefined: Triton's default scheduler, one unbounded queue without timeouts. */
  constructor(dynamic: DynamicBatchingConfig | undefined) {
    const numLevels = Math.max(1, dynamic?.priority_levels ?? 0);
    const fallback = dynamic?.default_queue_policy ?? NO_POLICY;
    this.policies = Array.from({ length: numLevels }, (_, i) => dynamic?.priority_queue_policy[String(i + 1)] ?? fallback);
    this.levels = Array.from({ length: numLevels }, () => []);
    const defaultPriority = dynamic?.default_priority_level ?? 0;
    this.defaultLevel = dynamic !== undefined && dynamic.priority_levels > 0 ? Math.max(1, defaultPriority) - 1 : 0;
  }

  /** Requests waiting, all levels. */
  get size(): number {
    return this.count;
  }

  /** FIFO per level, for decide(). Read-only: change the queue through add/remove only. */
  get view(): readonly (readonly QueueEntry<T>[])[] {
    return this.levels;
  }

  /** Triton: priority 0 or above the number of levels means the default level. */
  levelOf(parameters: Parameters): number {
    const priority = integerParameter(parameters, 'priority') ?? 0;
    if (priority === 0 || priority > this.levels.length) return this.defaultLevel;
    return priority - 1;
  }

  /**
   * The queue timeout of a request in µs (0 = none). As in Triton, a request's `timeout` only
   * counts where the level allows overrides, and only to lower a non-zero default: with a
   * default of 0 there is nothing to lower, so the request waits without a timeout.
   */
  timeoutUs(level: number, parameters: Parameters): number {
    const policy = this.policies[level] ?? NO_POLICY;
    const requested = integerParameter(parameters, 'timeout') ?? 0;
    const base = policy.default_timeout_microseconds;
    if (policy.allow_timeout_override && requested !== 0 && requested < base) return requested;
    return base;
  }

  /** Queues a request at `now` (monotonic ms). Throws UNAVAILABLE when its level is full. */
  add(admission: Admission<T>, now: number): QueueEntry<T> {
    const level = this.levelOf(admission.parameters);
    const policy = this.policies[level] ?? NO_POLICY;
    const timeoutUs = this.timeoutUs(level, admission.parameters);
    const queue = this.levels[level]!;
    if (policy.max_queue_size > 0 && queue.length >= policy.max_queue_size) {
      throw unavailable('Exceeds maximum queue size');
    }
    const entry: QueueEntry<T> = {
      level,
      payload: admission.payload,
      batchSize: admission.batchSize,
      signature: admission.signature,
      enqueuedAt: now,
      deadline: timeoutUs > 0 ? now + timeoutUs / 1000 : undefined,
      timeoutAction: policy.timeout_action,
    };
    queue.push(entry);
    this.count += 1;
    return entry;
  }

  /** Removes the given entries (a dispatched batch, timed-out or aborted requests). */
  remove(entries: readonly QueueEntry<T>[]): void {
    if (entries.length === 0) return;
    const gone = new Set(entries);
    const touched = new Set(entries.map((entry) => entry.level));
    for (const level of touched) {
      const before = this.levels[level]!;
      const after = before.filter((entry) => !gone.has(entry));
      this.count -= before.length - after.length;
      this.levels[level] = after;
    }
  }

  /** True when `entry` was still queued (and now is not). */
  removeOne(entry: QueueEntry<T>): boolean {
    const queue = this.levels[entry.level];
    const index = queue === undefined ? -1 : queue.indexOf(entry);
    if (index < 0) return false;
    queue!.splice(index, 1);
    this.count -= 1;
    return true;
  }
}
