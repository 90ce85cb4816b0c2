// The order runs happen in. Cases take turns (every case once a round) instead of running back to
// back, so a slow minute on a shared machine (another build, thermal throttling, a noisy
// neighbour) lands on every case about equally rather than on whichever case was running. Each
// measured round takes the cases in its own seeded order, so no case always follows the same one:
// what a run leaves behind (an engine worker finishing its idle checks, garbage to collect) would
// otherwise fall on one case every time — an engine with speculation configured but not proposing
// measured 0.66-0.92x of the same engine without it, only ever run right after that engine.

export interface Slot {
  readonly caseIndex: number;
  /** Repetition number within its phase (warm-up and measured reps count separately). */
  readonly rep: number;
  readonly warmup: boolean;
}

/** Warm-up rounds first (every case in order), then the measured rounds, each every case once in an order of its own (seeded: the same schedule every run). */
export function interleavedSchedule(caseCount: number, reps: number, warmup: number): Slot[] {
  const slots: Slot[] = [];
  for (let rep = 0; rep < warmup; rep++) for (let caseIndex = 0; caseIndex < caseCount; caseIndex++) slots.push({ caseIndex, rep, warmup: true });
  let seed = 0x9e3779b9;
  const next = (bound: number): number => {
    // xorshift32: enough to vary the order, and reproducible.
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % bound;
  };
  for (let rep = 0; rep < reps; rep++) {
    const order = Array.from({ length: caseCount }, (_, i) => i);
    // The first round in order (a one-round run reads as before); the rest shuffled (Fisher-Yates).
    if (rep > 0)
      for (let i = caseCount - 1; i > 0; i--) {
        const j = next(i + 1);
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
    for (const caseIndex of order) slots.push({ caseIndex, rep, warmup: false });
  }
  return slots;
}

/**
 * Time left for slots[from..], using each case's mean duration so far; a case not yet seen is
 * assumed to cost the mean of the cases that have been (undefined if none has run yet).
 */
export function estimateRemainingMs(slots: readonly Slot[], from: number, meanMsByCase: ReadonlyMap<number, number>): number | undefined {
  if (meanMsByCase.size === 0) return undefined;
  const known = [...meanMsByCase.values()];
  const fallback = known.reduce((a, b) => a + b, 0) / known.length;
  let total = 0;
  for (let i = from; i < slots.length; i++) total += meanMsByCase.get(slots[i]!.caseIndex) ?? fallback;
  return total;
}
