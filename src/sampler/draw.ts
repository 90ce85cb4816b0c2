// One random draw from a processed logits row: temperature → min_p → top_k → top_p → sample.
//
// Exponentials dominate the cost, so the common path computes them only for the "head": tokens
// within 18 nats (after temperature) of the best. Every other eligible token has mass below
// e^-18 of the best one, so their total is bounded by `slack` = count · e^-18 (≤ 2.3e-3 of the
// head on a 151,936 vocabulary). The draw stays exact by rejection: a uniform draw over
// head + slack that lands in the head is a head token with exactly the right probability; one
// that lands in the slack (rarely) resolves the tail exactly, and if it falls past the true tail
// mass, redraws from the complete distribution. top_p likewise decides from the head alone only
// when every tail mass in [0, slack] gives the same nucleus. Trained models put nearly all tokens
// far below the best, so the head is small; a random-weight model's flat row is all head.
//
// Tokens more than 30 nats below the best are treated as mass 0 (see sampler-truncate.ts).

import type { SamplingParams } from '../contracts/generate.js';
import { redrawKey, uniformAt, type StreamKey } from './rng.js';
import { argmax, gatherBetween, gatherNearMax, keepAtLeast, keepTopK, kthLargest } from './select.js';
import { CandidateTruncation, NEGLIGIBLE_NATS } from './truncate.js';

/** Up to this k, top_k selects from the gathered window or with a bounded heap over the row. */
export const SMALL_TOP_K = 256;
/** A small top_k selects among at most this many gathered tokens; past it the heap is cheaper. */
const QUICKSELECT_LIMIT = 8192;
const HEAD_NATS = 18;

export class Drawer {
  /** The row's maximum seen by the last draw (the logprobs need it too). */
  readonly gathered = { max: -Infinity };
  private readonly ids: Int32Array;
  private readonly vals: Float64Array;
  private readonly heapIds = new Int32Array(SMALL_TOP_K);
  private readonly heapVals = new Float64Array(SMALL_TOP_K);
  private readonly truncation: CandidateTruncation;
  /** Eligibility floor from min_p and a small top_k for the current draw (no window). */
  private floor = -Infinity;
  private readonly tailMassPerToken: number;

  /** `headNats` exists for tests, which need a tail heavy enough to observe. */
  constructor(
    capacity: number,
    private readonly headNats = HEAD_NATS,
  ) {
    this.tailMassPerToken = Math.exp(-headNats);
    this.ids = new Int32Array(capacity);
    this.vals = new Float64Array(capacity);
    this.truncation = new CandidateTruncation(capacity);
  }

  draw(row: Float32Array, n: number, params: SamplingParams, key: StreamKey, counter: number): number {
    const u = uniformAt(key, counter);
    // A large top_k counts every candidate, so it always takes the complete path.
    if (params.topK > SMALL_TOP_K) return this.drawExact(row, n, params, u);
    const t = params.temperature;
    const count = this.gatherEligible(row, n, params, this.headNats);
    const max = this.gathered.max;
    if (count < 0) return argmax(row, n);
    const headFloor = max - this.headNats * t;
    const slack = this.floor >= headFloor ? 0 : (n - count) * this.tailMassPerToken;
    const { ids, vals, truncation } = this;
    const topP = params.topP < 1;
    let kept = truncation.weigh(ids, vals, count, max, t, headFloor, topP);
    const headMass = truncation.total;
    if (topP) {
      const target = params.topP * (headMass + slack);
      if (target > headMass) return this.drawExact(row, n, params, u);
      kept = truncation.topP(ids, vals, kept, target);
      let mass = 0;
      let smallest = Infinity;
      for (let j = 0; j < kept; j++) {
        mass += vals[j]!;
        if (vals[j]! < smallest) smallest = vals[j]!;
      }
      // The nucleus must not depend on the unknown tail mass: the boundary token must cross for any of it.
      if (slack > 0 && mass - smallest >= params.topP * headMass) return this.drawExact(row, n, params, u);
      return walk(ids, vals, kept, u * mass);
    }
    const target = u * (headMass + slack);
    if (target < headMass) return walk(ids, vals, kept, target);
    return this.drawTail(row, n, params, target - headMass, headFloor, key, counter);
  }

  /**
   * Gathers eligible tokens within `window` nats (after temperature) of the best, as logits:
   * above min_p's floor and within a small top_k. Sets `gathered.max` and `floor` (the floor
   * from min_p and top_k alone); returns the count, or −1 when the row has no finite maximum.
   */
  private gatherEligible(row: Float32Array, n: number, params: SamplingParams, window: number): number {
    const t = params.temperature;
    const k = params.topK;
    const smallK = k > 0 && k <= SMALL_TOP_K;
    // A small top_k over a flat row would gather everything only to select a few: stop early and use the heap.
    let count = gatherNearMax(row, n, window * t, this.ids, this.vals, this.gathered, smallK ? QUICKSELECT_LIMIT : n);
    if (smallK && count > QUICKSELECT_LIMIT) return this.gatherTopKByHeap(row, n, params, window);
    const max = this.gathered.max;
    // Everything banned, or an infinite logit: no distribution to draw from, only a best token.
    if (!Number.isFinite(max)) return -1;
    const windowFloor = max - window * t;
    const floorP = minPFloor(params, max);
    count = keepAtLeast(this.ids, this.vals, count, Math.max(floorP, windowFloor));
    this.floor = floorP;
    if (!smallK) return count;
    if (count >= k) {
      // The k best are all in the window: select them among the few gathered.
      count = keepTopK(this.ids, this.vals, 0, count, k);
      let kth = Infinity;
      for (let j = 0; j < count; j++) kth = Math.min(kth, this.vals[j]!);
      this.floor = Math.max(floorP, kth);
      return count;
    }
    // Fewer than k eligible tokens and all of them gathered: top_k keeps them all.
    if (floorP >= windowFloor) return count;
    return this.gatherTopKByHeap(row, n, params, window);
  }

  /** A small top_k's k-th value from a bounded heap over the whole row, then the tokens above it. */
  private gatherTopKByHeap(row: Float32Array, n: number, params: SamplingParams, window: number): number {
    const kth = kthLargest(row, n, params.topK, this.heapIds, this.heapVals, this.gathered);
    const max = this.gathered.max;
    if (!Number.isFinite(max)) return -1;
    this.floor = Math.max(minPFloor(params, max), kth);
    return gatherBetween(row, n, Math.max(this.floor, max - window * params.temperature), Infinity, this.ids, this.vals);
  }

  /** The complete path: every eligible token within the 30-nat window, weighed exactly. */
  private drawExact(row: Float32Array, n: number, params: SamplingParams, u: number): number {
    const t = params.temperature;
    const { ids, vals, truncation } = this;
    let count = this.gatherEligible(row, n, params, NEGLIGIBLE_NATS);
    if (count < 0) return argmax(row, n);
    const max = this.gathered.max;
    if (params.topK > SMALL_TOP_K) count = truncation.topK(ids, vals, count, params.topK, max, t);
    const topP = params.topP < 1;
    count = truncation.weigh(ids, vals, count, max, t, -Infinity, topP);
    let total = truncation.total;
    if (topP && count > 1) {
      count = truncation.topP(ids, vals, count, params.topP * total);
      total = 0;
      for (let j = 0; j < count; j++) total += vals[j]!;
    }
    return walk(ids, vals, count, u * total);
  }

  /** A draw that landed `offset` past the head mass: the exact tail decides, or a fresh complete draw. */
  private drawTail(row: Float32Array, n: number, params: SamplingParams, offset: number, headFloor: number, key: StreamKey, counter: number): number {
    const t = params.temperature;
    const max = this.gathered.max;
    const lo = Math.max(this.floor, max - NEGLIGIBLE_NATS * t);
    const count = this.truncation.weigh(this.ids, this.vals, gatherBetween(row, n, lo, headFloor, this.ids, this.vals), max, t, -Infinity, false);
    if (offset < this.truncation.total) return walk(this.ids, this.vals, count, offset);
    // Rejected (the slack over-estimated the tail): a fresh draw from the full distribution is exact.
    return this.drawExact(row, n, params, uniformAt(redrawKey(key), counter));
  }
}

/** min_p keeps p ≥ min_p · p_max, i.e. logit ≥ max + T·ln(min_p): no exponentials needed. */
function minPFloor(params: SamplingParams, max: number): number {
  return params.minP > 0 ? max + params.temperature * Math.log(params.minP) : -Infinity;
}

/** The token whose cumulative mass first exceeds `target`, walking the candidates in order. */
function walk(ids: Int32Array, vals: Float64Array, count: number, target: number): number {
  let acc = 0;
  for (let j = 0; j < count; j++) {
    acc += vals[j]!;
    if (target < acc) return ids[j]!;
  }
  return ids[Math.max(0, count - 1)]!;
}
