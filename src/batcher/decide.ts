// Triton's dynamic batching decision as a pure function: the queue and the time go in, one
// decision comes out. The shell (dynamic-batcher.ts) owns the queue, the timer and the instances;
// nothing here reads a clock, so every case is a unit test with hand-built queues.

import type { ModelConfig } from '../contracts/model-config.js';
import { invalidArg } from '../errors.js';

export type TimeoutAction = 'REJECT' | 'DELAY';

/** One queued request as the decision sees it. */
export interface PendingEntry {
  /** The request's first dimension; 0 (or a non-batching model) counts as 1. */
  readonly batchSize: number;
  /** Requests with different signatures never share a batch (stack.ts `itemSignature`). */
  readonly signature: string;
  /** Monotonic clock at enqueue, ms. */
  readonly enqueuedAt: number;
  /** Monotonic ms from which the timeout action applies; undefined = no timeout. */
  readonly deadline: number | undefined;
  readonly timeoutAction: TimeoutAction;
}

/** The normalized scheduling settings of one model version. */
export interface BatchPolicy {
  /** false: one request per execution (no dynamic_batching, or max_batch_size 0). */
  readonly batching: boolean;
  /** Items per execution at most (≥ 1). */
  readonly maxBatchSize: number;
  /** Ascending, non-empty, each ≤ maxBatchSize. */
  readonly preferredBatchSizes: readonly number[];
  /** How long the oldest request may wait for a fuller batch, ms; 0 = never wait. */
  readonly maxQueueDelayMs: number;
}

export interface QueueSnapshot<E extends PendingEntry> {
  /** FIFO per priority level; index 0 is priority 1, the highest. */
  readonly levels: readonly (readonly E[])[];
  readonly policy: BatchPolicy;
  /** Instances free to take a batch now. */
  readonly freeInstances: number;
  /** Monotonic ms. */
  readonly now: number;
}

/**
 * `rejected`: entries past their deadline under REJECT, to fail with UNAVAILABLE whatever the
 * decision. `dispatch`: send `batch` (in queue order; `batchSize` items) now, then decide again.
 * `wait`: decide again at `until` (delay expiry or the next deadline), or earlier when a request
 * arrives or an instance frees up. `idle`: nothing happens until one of those events.
 */
export type Decision<E extends PendingEntry> =
  | { readonly kind: 'dispatch'; readonly batch: E[]; readonly batchSize: number; readonly rejected: E[] }
  | { readonly kind: 'wait'; readonly until: number; readonly rejected: E[] }
  | { readonly kind: 'idle'; readonly rejected: E[] };

const itemsOf = (entry: PendingEntry): number => Math.max(1, entry.batchSize);
const isExpired = (entry: PendingEntry, now: number): boolean => entry.deadline !== undefined && now >= entry.deadline;

interface Candidates<E> {
  /** Dispatch order: each level's unexpired entries, then its DELAY-expired ones, level by level. */
  readonly order: E[];
  readonly rejected: E[];
  /** Earliest future deadline of any entry, and of REJECT entries only (undefined: none). */
  readonly nextDeadline: number | undefined;
  readonly nextRejectDeadline: number | undefined;
}

const earlier = (a: number | undefined, b: number): number => (a === undefined || b < a ? b : a);

function candidates<E extends PendingEntry>(levels: readonly (readonly E[])[], now: number): Candidates<E> {
  const order: E[] = [];
  const rejected: E[] = [];
  let nextDeadline: number | undefined;
  let nextRejectDeadline: number | undefined;
  for (const level of levels) {
    // A DELAY-expired request yields only to unexpired requests of its own and higher levels,
    // so it still goes before every request of a lower level.
    const delayed: E[] = [];
    for (const entry of level) {
      if (isExpired(entry, now)) {
        (entry.timeoutAction === 'DELAY' ? delayed : rejected).push(entry);
        continue;
      }
      order.push(entry);
      if (entry.deadline === undefined) continue;
      nextDeadline = earlier(nextDeadline, entry.deadline);
      if (entry.timeoutAction === 'REJECT') nextRejectDeadline = earlier(nextRejectDeadline, entry.deadline);
    }
    order.push(...delayed);
  }
  return { order, rejected, nextDeadline, nextRejectDeadline };
}

interface Walk {
  /** Entries taken from the front of the order, and their items. */
  readonly count: number;
  readonly items: number;
  /** Entries in the batch to send if the delay has not expired; 0 = none found. */
  readonly bestCount: number;
  /** The batch cannot grow: the next request overflows max_batch_size or has another shape. */
  readonly full: boolean;
  readonly oldest: number;
}

/**
 * Walks the order the way Triton's GetDynamicBatch does: up to max_batch_size items, stopping at
 * the first request that would overflow it or whose signature differs. `bestCount` marks the
 * largest preferred size reached or, when none was, the cut just before max(preferred) is
 * exceeded, which is what goes out while the oldest request is still within its delay.
 */
function walk(order: readonly PendingEntry[], policy: BatchPolicy): Walk {
  const preferred = policy.preferredBatchSizes;
  const maxPreferred = preferred[preferred.length - 1] ?? policy.maxBatchSize;
  const signature = order[0]?.signature;
  let count = 0;
  let items = 0;
  let bestCount = 0;
  let full = false;
  let oldest = Number.POSITIVE_INFINITY;
  for (const entry of order) {
    const n = itemsOf(entry);
    if (count > 0) {
      if (items + n > maxPreferred && bestCount === 0) bestCount = count;
      if (items + n > policy.maxBatchSize || entry.signature !== signature) {
        full = true;
        break;
      }
    }
    count += 1;
    items += n;
    oldest = Math.min(oldest, entry.enqueuedAt);
    if (preferred.includes(items)) bestCount = count;
  }
  return { count, items, bestCount, full, oldest };
}

function dispatch<E extends PendingEntry>(order: E[], count: number, rejected: E[]): Decision<E> {
  const batch = order.slice(0, count);
  const batchSize = batch.reduce((sum, entry) => sum + itemsOf(entry), 0);
  return { kind: 'dispatch', batch, batchSize, rejected };
}

function waitOrIdle<E extends PendingEntry>(until: number | undefined, rejected: E[]): Decision<E> {
  return until === undefined ? { kind: 'idle', rejected } : { kind: 'wait', until, rejected };
}

/** The batching decision for one moment. Pure: same snapshot, same decision. */
export function decide<E extends PendingEntry>(snapshot: QueueSnapshot<E>): Decision<E> {
  const { policy, now } = snapshot;
  const { order, rejected, nextDeadline, nextRejectDeadline } = candidates(snapshot.levels, now);
  // Without a free instance only REJECT deadlines need a wake-up; the instance-free event
  // brings the rest.
  if (snapshot.freeInstances <= 0 || order.length === 0) return waitOrIdle(nextRejectDeadline, rejected);
  if (!policy.batching) return dispatch(order, 1, rejected);

  const w = walk(order, policy);
  const delay = policy.maxQueueDelayMs;
  const delayExpired = delay > 0 && now - w.oldest >= delay;
  if (w.bestCount > 0 && !delayExpired) return dispatch(order, w.bestCount, rejected);
  const maxPreferred = policy.preferredBatchSizes[policy.preferredBatchSizes.length - 1] ?? policy.maxBatchSize;
  if (w.full || w.items >= maxPreferred || delay === 0 || delayExpired) return dispatch(order, w.count, rejected);
  // Hold the batch for more arrivals, but wake for a deadline so it is enforced on time.
  const delayEnds = w.oldest + delay;
  return { kind: 'wait', until: nextDeadline === undefined ? delayEnds : Math.min(delayEnds, nextDeadline), rejected };
}

/**
 * The scheduler settings of a config. Without dynamic_batching (Triton's default scheduler) or
 * with max_batch_size 0, each request executes alone; queue policies still apply in the latter.
 * An empty preferred_batch_size means [max_batch_size], as Triton normalizes it.
 */
export function batchPolicy(config: Pick<ModelConfig, 'name' | 'max_batch_size' | 'dynamic_batching'>): BatchPolicy {
  const dynamic = config.dynamic_batching;
  const max = config.max_batch_size;
  if (dynamic === undefined || max <= 0) {
    return { batching: false, maxBatchSize: 1, preferredBatchSizes: [1], maxQueueDelayMs: 0 };
  }
  for (const size of dynamic.preferred_batch_size) {
    if (!Number.isInteger(size) || size <= 0 || size > max) {
      throw invalidArg(`dynamic batching preferred size must be positive and <= max_batch_size ${max} for '${config.name}', got ${size}`);
    }
  }
  const preferred = [...new Set(dynamic.preferred_batch_size)].sort((a, b) => a - b);
  return {
    batching: true,
    maxBatchSize: max,
    preferredBatchSizes: preferred.length > 0 ? preferred : [max],
    maxQueueDelayMs: dynamic.max_queue_delay_microseconds / 1000,
  };
}
