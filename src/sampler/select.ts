// Selection kernels for the sampler. Every function runs in expected linear time over its input
// and works in caller-owned scratch arrays: on a 151,936-entry vocabulary a full sort per token
// would cost milliseconds and allocate, and only a handful of candidates ever matter.
//
// Candidate sets are parallel arrays: `idx` (token ids) and `val` (a logit or a probability mass).
// Functions that "keep" a subset rearrange both arrays so the kept entries are [0, count).

/** Where a three-way partition left its regions; module-level so partitioning never allocates. */
const region = { gt: 0, lt: 0 };

function swap(val: Float64Array, idx: Int32Array, i: number, j: number): void {
  const v = val[i]!;
  val[i] = val[j]!;
  val[j] = v;
  const t = idx[i]!;
  idx[i] = idx[j]!;
  idx[j] = t;
}

function medianOfThree(val: Float64Array, lo: number, hi: number): number {
  const a = val[lo]!;
  const b = val[(lo + hi) >>> 1]!;
  const c = val[hi - 1]!;
  if (a < b) return b < c ? b : a < c ? c : a;
  return a < c ? a : b < c ? c : b;
}

/**
 * Three-way partition of [lo, hi) around `pivot`, descending: afterwards [lo, gt) > pivot,
 * [gt, lt) == pivot, [lt, hi) < pivot (region.gt / region.lt). Equal keys get their own region so
 * inputs with many ties (masked or quantized logits) still make progress.
 */
function partition3(val: Float64Array, idx: Int32Array, lo: number, hi: number, pivot: number): void {
  let gt = lo;
  let i = lo;
  let lt = hi;
  while (i < lt) {
    const v = val[i]!;
    if (v > pivot) swap(val, idx, i++, gt++);
    else if (v < pivot) swap(val, idx, i, --lt);
    else i++;
  }
  region.gt = gt;
  region.lt = lt;
}

/**
 * Index of the largest of row[0, n); the lowest index wins ties; NaN never wins; 0 if nothing is
 * above -Infinity. Four independent lanes (each keeps its own first maximum, merged by value then
 * index) run 1.8× faster in V8 than one compare chain: a greedy step of the PastKeyValuesRunner
 * scans all 151,936 logits, ≈ 0.55 → 0.3 ms on the bench machine (one-off microbenchmark).
 */
export function argmax(row: Float32Array, n: number): number {
  // Plain statements: destructuring assignments in this loop made it 4× slower in V8.
  let i0 = -1;
  let i1 = -1;
  let i2 = -1;
  let i3 = -1;
  let v0 = -Infinity;
  let v1 = -Infinity;
  let v2 = -Infinity;
  let v3 = -Infinity;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const x0 = row[i]!;
    const x1 = row[i + 1]!;
    const x2 = row[i + 2]!;
    const x3 = row[i + 3]!;
    if (x0 > v0) {
      v0 = x0;
      i0 = i;
    }
    if (x1 > v1) {
      v1 = x1;
      i1 = i + 1;
    }
    if (x2 > v2) {
      v2 = x2;
      i2 = i + 2;
    }
    if (x3 > v3) {
      v3 = x3;
      i3 = i + 3;
    }
  }
  let best = 0;
  let bestVal = -Infinity;
  const lanes = [v0, i0, v1, i1, v2, i2, v3, i3];
  for (let lane = 0; lane < 8; lane += 2) {
    const [value, index] = [lanes[lane]!, lanes[lane + 1]!];
    if (index >= 0 && (value > bestVal || (value === bestVal && index < best))) {
      bestVal = value;
      best = index;
    }
  }
  // The tail's indices are above every lane's, so a tie keeps the lane's.
  for (; i < n; i++) {
    const x = row[i]!;
    if (x > bestVal) {
      bestVal = x;
      best = i;
    }
  }
  return best;
}

/**
 * One pass over row[0, n): collects every token whose logit is at least `window` below the
 * running maximum into (idx, val), and returns the count. The running maximum only rises, so the
 * result is a superset of "within `window` of the final maximum"; callers trim it with
 * keepAtLeast once the maximum is known (returned in `out.max`). One pass instead of two matters
 * when each pass is a third of the sampler's time. Past `limit` entries it gives up early and
 * returns limit + 1 (`out.max` is then meaningless).
 */
export function gatherNearMax(row: Float32Array, n: number, window: number, idx: Int32Array, val: Float64Array, out: { max: number }, limit = n): number {
  let max = -Infinity;
  let floor = -Infinity;
  let count = 0;
  for (let i = 0; i < n; i++) {
    const x = row[i]!;
    if (x >= floor) {
      if (x > max) {
        max = x;
        floor = x - window;
      }
      if (count === limit) return limit + 1;
      idx[count] = i;
      val[count] = x;
      count++;
    }
  }
  out.max = max;
  return count;
}

/** Keeps entries with val ≥ threshold, in their current order; returns the new count. */
export function keepAtLeast(idx: Int32Array, val: Float64Array, count: number, threshold: number): number {
  let kept = 0;
  for (let j = 0; j < count; j++) {
    const v = val[j]!;
    if (v >= threshold) {
      idx[kept] = idx[j]!;
      val[kept] = v;
      kept++;
    }
  }
  return kept;
}

/**
 * Within [lo, hi): keeps the k largest values and every value tied with the k-th (a token is
 * dropped only when its logit is strictly below the k-th largest, as vLLM masks). Quickselect,
 * expected O(hi − lo). Returns the end of the kept range, [lo, end).
 */
export function keepTopK(idx: Int32Array, val: Float64Array, lo: number, hi: number, k: number): number {
  if (k >= hi - lo) return hi;
  if (k <= 0) return lo;
  const rank = lo + k - 1; // position the k-th largest would take in a descending sort
  // Invariant: that position lies in [lo, hi); [start, lo) holds larger values, [hi, end) smaller.
  while (hi - lo > 1) {
    partition3(val, idx, lo, hi, medianOfThree(val, lo, hi));
    const { gt, lt } = region;
    if (rank < gt) hi = gt;
    else if (rank < lt) return lt;
    else lo = lt;
  }
  return hi;
}

/** Insertion sort of [lo, hi) by descending value: only ever called on a few entries. */
function sortDescending(idx: Int32Array, val: Float64Array, lo: number, hi: number): void {
  for (let i = lo + 1; i < hi; i++) {
    const v = val[i]!;
    const t = idx[i]!;
    let j = i - 1;
    while (j >= lo && val[j]! < v) {
      val[j + 1] = val[j]!;
      idx[j + 1] = idx[j]!;
      j--;
    }
    val[j + 1] = v;
    idx[j + 1] = t;
  }
}

/**
 * Nucleus selection within [lo, hi) over unnormalized masses `val`: keeps the most probable
 * tokens, in descending order, while the mass already kept (`above` plus this range's) is below
 * `target`, so the token that crosses it stays. Partition-based, expected O(hi − lo), no full
 * sort. Returns the end of the kept range, [lo, end).
 */
export function keepTopMass(idx: Int32Array, val: Float64Array, lo: number, hi: number, above: number, target: number): number {
  while (hi - lo > 16) {
    partition3(val, idx, lo, hi, medianOfThree(val, lo, hi));
    const { gt, lt } = region;
    let massGreater = 0;
    for (let j = lo; j < gt; j++) massGreater += val[j]!;
    if (above + massGreater >= target) {
      hi = gt; // the boundary lies among the larger values
      continue;
    }
    above += massGreater;
    const pivot = val[gt]!;
    for (let j = gt; j < lt; j++) {
      if (above >= target) return j;
      above += pivot;
    }
    lo = lt;
  }
  sortDescending(idx, val, lo, hi);
  for (let j = lo; j < hi; j++) {
    if (above >= target) return j;
    above += val[j]!;
  }
  return hi;
}

/**
 * The `n` largest of row[0, rowLen) with their ids, best first (lower id first on ties), via a
 * bounded min-heap: almost every entry fails one comparison against the heap's root.
 * Writes into (ids, vals) and returns the count (min(n, rowLen)).
 */
export function topN(row: Float32Array, rowLen: number, n: number, ids: Int32Array, vals: Float64Array): number {
  if (n <= 0) return 0;
  let size = 0;
  let i = 0;
  // Fill the heap first, then the scan that nearly every entry leaves after one comparison
  // against the root, whose value lives in a local so that comparison touches no memory.
  for (; i < rowLen && size < n; i++) {
    const x = row[i]!;
    if (!Number.isNaN(x)) heapPush(ids, vals, size++, i, x); // NaN never ranks
  }
  let threshold = vals[0]!;
  for (; i < rowLen; i++) {
    const x = row[i]!;
    if (x > threshold) {
      heapReplaceRoot(ids, vals, size, i, x);
      threshold = vals[0]!;
    }
  }
  sortHeapOutput(ids, vals, size);
  return size;
}

/**
 * The k-th largest of row[0, n) counted with multiplicity (so ties with it are found by a
 * `≥ kth` scan afterwards), and the maximum in `out.max`, by one bounded-heap pass: for a small k
 * almost every entry costs one comparison. Needs k ≥ 1; −∞ when fewer than k values are ranked.
 */
export function kthLargest(row: Float32Array, n: number, k: number, ids: Int32Array, vals: Float64Array, out: { max: number }): number {
  let size = 0;
  let max = -Infinity;
  let threshold = -Infinity; // the root's value, kept in a local as in topN
  for (let i = 0; i < n; i++) {
    const x = row[i]!;
    if (x > max) max = x;
    if (size < k) {
      if (Number.isNaN(x)) continue;
      heapPush(ids, vals, size++, i, x);
      if (size === k) threshold = vals[0]!;
    } else if (x > threshold) {
      heapReplaceRoot(ids, vals, size, i, x);
      threshold = vals[0]!;
    }
  }
  out.max = max;
  return size < k ? -Infinity : vals[0]!;
}

/** Collects every token of row[0, n) with floor ≤ logit < ceiling into (idx, val); returns the count. */
export function gatherBetween(row: Float32Array, n: number, floor: number, ceiling: number, idx: Int32Array, val: Float64Array): number {
  let count = 0;
  for (let i = 0; i < n; i++) {
    const x = row[i]!;
    if (x >= floor && x < ceiling) {
      idx[count] = i;
      val[count] = x;
      count++;
    }
  }
  return count;
}

// Min-heap ordered by value, then by id descending, so the root is the entry to evict first.
function heapLess(ids: Int32Array, vals: Float64Array, a: number, b: number): boolean {
  return vals[a]! < vals[b]! || (vals[a] === vals[b] && ids[a]! > ids[b]!);
}

function heapPush(ids: Int32Array, vals: Float64Array, at: number, id: number, v: number): void {
  ids[at] = id;
  vals[at] = v;
  let i = at;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!heapLess(ids, vals, i, parent)) break;
    swap(vals, ids, i, parent);
    i = parent;
  }
}

function heapReplaceRoot(ids: Int32Array, vals: Float64Array, size: number, id: number, v: number): void {
  ids[0] = id;
  vals[0] = v;
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < size && heapLess(ids, vals, l, m)) m = l;
    if (r < size && heapLess(ids, vals, r, m)) m = r;
    if (m === i) return;
    swap(vals, ids, i, m);
    i = m;
  }
}

function sortHeapOutput(ids: Int32Array, vals: Float64Array, size: number): void {
  for (let i = 1; i < size; i++) {
    const v = vals[i]!;
    const t = ids[i]!;
    let j = i - 1;
    while (j >= 0 && (vals[j]! < v || (vals[j] === v && ids[j]! > t))) {
      vals[j + 1] = vals[j]!;
      ids[j + 1] = ids[j]!;
      j--;
    }
    vals[j + 1] = v;
    ids[j + 1] = t;
  }
}
