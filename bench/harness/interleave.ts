// The order runs happen in. Cases take turns (A, B, C, A, B, C, …) instead of running back to
// back, so a slow minute on a shared machine (another build, thermal throttling, a noisy
// neighbour) lands on every case about equally rather than on whichever case was running.

export interface Slot {
  readonly caseIndex: number;
  /** Repetition number within its phase (warm-up and measured reps count separately). */
  readonly rep: number;
  readonly warmup: boolean;
}

/** Warm-up rounds first (every case, round-robin), then the measured rounds, also round-robin. */
export function interleavedSchedule(caseCount: number, reps: number, warmup: number): Slot[] {
  const slots: Slot[] = [];
  const phase = (rounds: number, isWarmup: boolean): void => {
    for (let rep = 0; rep < rounds; rep++) {
      for (let caseIndex = 0; caseIndex < caseCount; caseIndex++) slots.push({ caseIndex, rep, warmup: isWarmup });
    }
  };
  phase(warmup, true);
  phase(reps, false);
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
