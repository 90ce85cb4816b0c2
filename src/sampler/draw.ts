// One random draw from a processed logits row, as a pipeline of stages over one candidate set:
//
//   gather   the tokens near the maximum, as logits (the window below; temperature sets its width)
//   min_p    a logit floor, max + T·ln(min_p): no exponentials needed
//   top_k    a small k by quickselect among the gathered or a bounded heap over the row; a large k
//            by a histogram of buckets
//   weigh    temperature: each logit becomes its unnormalized probability exp((logit − max) / T)
//   top_p    the nucleus, by a histogram of masses per bucket and a partition of the boundary one
//   walk     the token whose cumulative mass first exceeds u · total
//
// Exponentials dominate the cost, so the common path (`draw`) weighs only the "head": tokens
// within 18 nats (after temperature) of the best. Every other eligible token has mass below
// e^-18 of the best one, so their total is bounded by `slack` = count · e^-18 (≤ 2.3e-3 of the
// head on a 151,936 vocabulary). The draw stays exact by rejection: a uniform draw over
// head + slack that lands in the head is a head token with exactly the right probability; one
// that lands in the slack (rarely) resolves the tail exactly, and if it falls past the true tail
// mass, redraws from the complete distribution (`drawExact`: the same stages over the 30-nat
// window). top_p likewise decides from the head alone only when every tail mass in [0, slack]
// gives the same nucleus. Trained models put nearly all tokens far below the best, so the head is
// small; a random-weight model's flat row is all head. Tokens more than 30 nats below the best
// have probability < 1e-13 each and < 1.5e-8 together, under float32 logit resolution: mass 0.
//
// Stages rearrange the candidates so the kept ones are [0, count), never sort them, and work in
// typed arrays sized once per sampler.

import type { SamplingParams } from '../contracts/generate.js';
import { NEGLIGIBLE_NATS, NUM_BUCKETS, PER_NAT, bucketAt, expScaled } from './exp-table.js';
import { redrawKey, uniformAt, type StreamKey } from './rng.js';
import { argmax, gatherBetween, gatherNearMax, keepAtLeast, keepTopK, keepTopMass, kthLargest } from './select.js';

/** Up to this k, top_k selects from the gathered window or with a bounded heap over the row. */
export const SMALL_TOP_K = 256;
/** A small top_k selects among at most this many gathered tokens; past it the heap is cheaper. */
const QUICKSELECT_LIMIT = 8192;
const HEAD_NATS = 18;

/** Tokens and their probabilities (parallel arrays, probabilities summing to 1). */
export interface TokenDistribution {
  readonly ids: Int32Array;
  readonly probs: Float64Array;
}

/** The candidate set of one draw and the scratch its stages work in. */
export class Candidates {
  /** Token ids, parallel to `vals`; entries [0, count) are the candidates. */
  readonly ids: Int32Array;
  /** Logits until `weigh`, unnormalized probabilities after. */
  readonly vals: Float64Array;
  count = 0;
  /** The row's maximum, found by the gather. */
  max = -Infinity;
  /** The eligibility floor from min_p and a small top_k alone (no window), as a logit. */
  floor = -Infinity;
  /** The candidates' mass, left by `weigh`. */
  total = 0;
  /** Each candidate's bucket (its distance below the maximum, see exp-table.ts). */
  readonly buckets: Uint16Array;
  readonly countPerBucket = new Uint32Array(NUM_BUCKETS);
  readonly massPerBucket = new Float64Array(NUM_BUCKETS);
  // The boundary bucket's entries, set aside while the rest is compacted.
  readonly sideIds: Int32Array;
  readonly sideVals: Float64Array;
  readonly heapIds = new Int32Array(SMALL_TOP_K);
  readonly heapVals = new Float64Array(SMALL_TOP_K);

  constructor(capacity: number) {
    this.ids = new Int32Array(capacity);
    this.vals = new Float64Array(capacity);
    this.buckets = new Uint16Array(capacity);
    this.sideIds = new Int32Array(capacity);
    this.sideVals = new Float64Array(capacity);
  }
}

export class Drawer {
  private readonly c: Candidates;
  private readonly tailMassPerToken: number;

  /** `headNats` exists for tests, which need a tail heavy enough to observe. */
  constructor(
    capacity: number,
    private readonly headNats = HEAD_NATS,
  ) {
    this.c = new Candidates(capacity);
    this.tailMassPerToken = Math.exp(-headNats);
  }

  /** The row's maximum seen by the last draw (the logprobs need it too). */
  get max(): number {
    return this.c.max;
  }

  draw(row: Float32Array, n: number, params: SamplingParams, key: StreamKey, counter: number): number {
    const u = uniformAt(key, counter);
    // A large top_k counts every candidate, so it always takes the complete path.
    if (params.topK > SMALL_TOP_K) return this.drawExact(row, n, params, u);
    const { c, headNats } = this;
    // gather + min_p + top_k over the head only; whatever eligible token is left out weighs at most `slack`.
    if (!gatherEligible(c, row, n, params, headNats)) return argmax(row, n);
    const headFloor = c.max - headNats * params.temperature;
    const slack = c.floor >= headFloor ? 0 : (n - c.count) * this.tailMassPerToken;
    const topP = params.topP < 1;
    weigh(c, params.temperature, topP);
    const headMass = c.total;
    // top_p, then walk: from the head when the nucleus is the same for any tail mass in [0, slack].
    if (topP) {
      const target = params.topP * (headMass + slack);
      if (target > headMass) return this.drawExact(row, n, params, u);
      keepTopP(c, target);
      const { mass, smallest } = massAndSmallest(c);
      // The nucleus must not depend on the unknown tail mass: the boundary token must cross for any of it.
      if (slack > 0 && mass - smallest >= params.topP * headMass) return this.drawExact(row, n, params, u);
      return walk(c, u * mass);
    }
    // walk: a draw over head + slack that lands in the head is exact as it is.
    const target = u * (headMass + slack);
    if (target < headMass) return walk(c, target);
    return this.drawTail(row, n, params, target - headMass, headFloor, key, counter);
  }

  /** The complete path: every eligible token within the 30-nat window, weighed exactly. */
  private drawExact(row: Float32Array, n: number, params: SamplingParams, u: number): number {
    const total = this.weighExact(row, n, params);
    return total === null ? argmax(row, n) : walk(this.c, u * total);
  }

  /**
   * Exactly the distribution draw() samples from (its fast path draws from the same one, by
   * rejection): every token it can return with its probability, normalized. A row with no finite
   * maximum draws its argmax, so that is a point mass. Speculative decoding's acceptance rule
   * reads it (acceptance.ts).
   */
  distribution(row: Float32Array, n: number, params: SamplingParams): TokenDistribution {
    const total = this.weighExact(row, n, params);
    if (total === null) return { ids: Int32Array.of(argmax(row, n)), probs: Float64Array.of(1) };
    const { ids, vals, count } = this.c;
    const probs = new Float64Array(count);
    for (let j = 0; j < count; j++) probs[j] = vals[j]! / total;
    return { ids: ids.slice(0, count), probs };
  }

  /** Leaves the eligible tokens of the 30-nat window weighed in the candidates (top_k and top_p applied); their mass, or null when the row has no finite maximum. */
  private weighExact(row: Float32Array, n: number, params: SamplingParams): number | null {
    const { c } = this;
    if (!gatherEligible(c, row, n, params, NEGLIGIBLE_NATS)) return null;
    if (params.topK > SMALL_TOP_K) keepTopKByBuckets(c, params.topK, params.temperature);
    const topP = params.topP < 1;
    weigh(c, params.temperature, topP);
    if (!topP || c.count <= 1) return c.total;
    keepTopP(c, params.topP * c.total);
    return massAndSmallest(c).mass;
  }

  /** A draw that landed `offset` past the head mass: the exact tail decides, or a fresh complete draw. */
  private drawTail(row: Float32Array, n: number, params: SamplingParams, offset: number, headFloor: number, key: StreamKey, counter: number): number {
    const { c } = this;
    const lo = Math.max(c.floor, c.max - NEGLIGIBLE_NATS * params.temperature);
    c.count = gatherBetween(row, n, lo, headFloor, c.ids, c.vals);
    weigh(c, params.temperature, false);
    if (offset < c.total) return walk(c, offset);
    // Rejected (the slack over-estimated the tail): a fresh draw from the full distribution is exact.
    return this.drawExact(row, n, params, uniformAt(redrawKey(key), counter));
  }
}

// ---------------------------------------------------------------------------------------------
// Stages, in pipeline order.

/**
 * gather + min_p + small top_k: the eligible tokens within `window` nats (after temperature) of
 * the best, as logits. Sets `max`, `count` and `floor`; false when the row has no finite maximum
 * (everything banned, or an infinite logit: no distribution to draw from, only a best token).
 */
export function gatherEligible(c: Candidates, row: Float32Array, n: number, params: SamplingParams, window: number): boolean {
  const k = params.topK;
  const smallK = k > 0 && k <= SMALL_TOP_K;
  // A small top_k over a flat row would gather everything only to select a few: stop early and use the heap.
  const gathered = gatherNearMax(row, n, window * params.temperature, c.ids, c.vals, c, smallK ? QUICKSELECT_LIMIT : n);
  if (smallK && gathered > QUICKSELECT_LIMIT) return gatherTopKByHeap(c, row, n, params, window);
  if (!Number.isFinite(c.max)) return false;
  const windowFloor = c.max - window * params.temperature;
  const floorP = minPFloor(params, c.max);
  c.count = keepAtLeast(c.ids, c.vals, gathered, Math.max(floorP, windowFloor));
  c.floor = floorP;
  if (!smallK) return true;
  if (c.count >= k) {
    // The k best are all in the window: select them among the few gathered.
    c.count = keepTopK(c.ids, c.vals, 0, c.count, k);
    let kth = Infinity;
    for (let j = 0; j < c.count; j++) kth = Math.min(kth, c.vals[j]!);
    c.floor = Math.max(floorP, kth);
    return true;
  }
  // Fewer than k eligible tokens and all of them gathered: top_k keeps them all.
  if (floorP >= windowFloor) return true;
  return gatherTopKByHeap(c, row, n, params, window);
}

/** min_p keeps p ≥ min_p · p_max, i.e. logit ≥ max + T·ln(min_p). */
function minPFloor(params: SamplingParams, max: number): number {
  return params.minP > 0 ? max + params.temperature * Math.log(params.minP) : -Infinity;
}

/** A small top_k's k-th value from a bounded heap over the whole row, then the tokens above it. */
function gatherTopKByHeap(c: Candidates, row: Float32Array, n: number, params: SamplingParams, window: number): boolean {
  const kth = kthLargest(row, n, params.topK, c.heapIds, c.heapVals, c);
  if (!Number.isFinite(c.max)) return false;
  c.floor = Math.max(minPFloor(params, c.max), kth);
  c.count = gatherBetween(row, n, Math.max(c.floor, c.max - window * params.temperature), Infinity, c.ids, c.vals);
  return true;
}

/**
 * A large top_k over candidates that are still logits: keeps the k largest plus ties with the
 * k-th. The buckets above the k-th's are kept wholesale; only the boundary bucket is partitioned.
 */
export function keepTopKByBuckets(c: Candidates, k: number, temperature: number): void {
  if (k >= c.count) return;
  const scale = PER_NAT / temperature;
  const { buckets, countPerBucket: counts } = c;
  counts.fill(0);
  for (let j = 0; j < c.count; j++) {
    const b = bucketOf(c.max, c.vals[j]!, scale);
    buckets[j] = b;
    counts[b] = counts[b]! + 1;
  }
  let boundary = 0;
  let above = 0;
  while (above + counts[boundary]! < k) above += counts[boundary++]!;
  const side = setBoundaryAside(c, boundary);
  appendSide(c, keepTopK(c.sideIds, c.sideVals, 0, side, k - above));
}

/**
 * Temperature: replaces each candidate's logit with its unnormalized probability
 * exp((logit − max) / T) and leaves their sum in `total`. With `forTopP`, also records each
 * one's bucket and the mass per bucket for keepTopP.
 */
export function weigh(c: Candidates, temperature: number, forTopP: boolean): void {
  const { vals, max, count } = c;
  const scale = PER_NAT / temperature;
  let total = 0;
  // Two loops rather than a branch per candidate: this is the draw's hottest loop on a flat row.
  if (!forTopP) {
    for (let j = 0; j < count; j++) {
      const y = (max - vals[j]!) * scale;
      const p = expScaled(y, bucketAt(y));
      vals[j] = p;
      total += p;
    }
    c.total = total;
    return;
  }
  const { buckets, massPerBucket: masses } = c;
  masses.fill(0);
  for (let j = 0; j < count; j++) {
    const y = (max - vals[j]!) * scale;
    const k = bucketAt(y);
    const p = expScaled(y, k);
    buckets[j] = k;
    vals[j] = p;
    masses[k] = masses[k]! + p;
    total += p;
  }
  c.total = total;
}

/**
 * top_p over weighed candidates: keeps the most probable tokens while the mass kept before each
 * is below `target` (= top_p × total), so the token that crosses it stays.
 */
export function keepTopP(c: Candidates, target: number): void {
  const masses = c.massPerBucket;
  const last = NUM_BUCKETS - 1;
  let boundary = 0;
  let above = 0;
  while (boundary < last && above + masses[boundary]! < target) above += masses[boundary++]!;
  const side = setBoundaryAside(c, boundary);
  appendSide(c, keepTopMass(c.sideIds, c.sideVals, 0, side, above, target));
}

/** The token whose cumulative mass first exceeds `target`, walking the candidates in order. */
function walk(c: Candidates, target: number): number {
  const { ids, vals, count } = c;
  let acc = 0;
  for (let j = 0; j < count; j++) {
    acc += vals[j]!;
    if (target < acc) return ids[j]!;
  }
  return ids[Math.max(0, count - 1)]!;
}

// ---------------------------------------------------------------------------------------------
// Helpers of the bucketed stages.

function bucketOf(max: number, logit: number, scale: number): number {
  return bucketAt((max - logit) * scale);
}

function massAndSmallest(c: Candidates): { mass: number; smallest: number } {
  let mass = 0;
  let smallest = Infinity;
  for (let j = 0; j < c.count; j++) {
    mass += c.vals[j]!;
    if (c.vals[j]! < smallest) smallest = c.vals[j]!;
  }
  return { mass, smallest };
}

/**
 * Moves the candidates of buckets above `boundary` to the front (in order), sets the boundary
 * bucket's aside and drops the rest; `count` becomes the front's length and the return value the
 * number set aside. Copying forward is safe because every position is read before it is written.
 */
function setBoundaryAside(c: Candidates, boundary: number): number {
  const { ids, vals, buckets, sideIds, sideVals, count } = c;
  let w = 0;
  let side = 0;
  for (let j = 0; j < count; j++) {
    const b = buckets[j]!;
    if (b < boundary) {
      ids[w] = ids[j]!;
      vals[w++] = vals[j]!;
    } else if (b === boundary) {
      sideIds[side] = ids[j]!;
      sideVals[side++] = vals[j]!;
    }
  }
  c.count = w;
  return side;
}

/** Appends the first `kept` set-aside entries after the front. */
function appendSide(c: Candidates, kept: number): void {
  for (let j = 0; j < kept; j++) {
    c.ids[c.count + j] = c.sideIds[j]!;
    c.vals[c.count + j] = c.sideVals[j]!;
  }
  c.count += kept;
}
