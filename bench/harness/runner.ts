// Runs cases in the interleaved order and times each run. A case that throws is dropped from
// the rest of the run and reported as skipped, so one broken variant costs its own numbers only.

import { estimateRemainingMs, interleavedSchedule } from './interleave.js';
import type { Progress } from './progress.js';
import { caseId, type BenchCase, type SkippedCase } from './types.js';

export interface RunOptions {
  readonly reps: number;
  readonly warmup: number;
  readonly progress?: Progress;
  readonly now?: () => number;
}

export interface RunOutcome {
  /** Measured samples (ms) of every case that finished, by case index. */
  readonly samplesMs: ReadonlyMap<number, number[]>;
  readonly failed: readonly SkippedCase[];
}

export async function runInterleaved(cases: readonly BenchCase[], options: RunOptions): Promise<RunOutcome> {
  const now = options.now ?? (() => performance.now());
  const slots = interleavedSchedule(cases.length, options.reps, options.warmup);
  const samples = new Map<number, number[]>(cases.map((_, i) => [i, []]));
  const totals = new Map<number, { ms: number; runs: number }>();
  const failed: SkippedCase[] = [];
  const dead = new Set<number>();

  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i]!;
    if (dead.has(slot.caseIndex)) continue;
    const benchCase = cases[slot.caseIndex]!;
    options.progress?.update({
      label: `${caseId(benchCase)}${slot.warmup ? ' (warm-up)' : ''}`,
      done: i,
      total: slots.length,
      etaMs: estimateRemainingMs(slots, i, meanByCase(totals, dead)),
    });
    const start = now();
    try {
      await benchCase.run({ warmup: slot.warmup, rep: slot.rep });
    } catch (error) {
      dead.add(slot.caseIndex);
      samples.delete(slot.caseIndex);
      const phase = slot.warmup ? 'warm-up' : `rep ${slot.rep + 1}`;
      failed.push({ group: benchCase.group, variant: benchCase.variant, point: benchCase.point, reason: `failed in ${phase}: ${messageOf(error)}` });
      options.progress?.log(`${caseId(benchCase)} failed, dropped: ${messageOf(error)}`);
      continue;
    }
    const elapsed = now() - start;
    const total = totals.get(slot.caseIndex) ?? { ms: 0, runs: 0 };
    totals.set(slot.caseIndex, { ms: total.ms + elapsed, runs: total.runs + 1 });
    if (!slot.warmup) samples.get(slot.caseIndex)!.push(elapsed);
  }
  options.progress?.update({ label: 'done', done: slots.length, total: slots.length, etaMs: 0 });
  options.progress?.finish();
  return { samplesMs: samples, failed };
}

function meanByCase(totals: ReadonlyMap<number, { ms: number; runs: number }>, dead: ReadonlySet<number>): Map<number, number> {
  const means = new Map<number, number>();
  for (const [index, { ms, runs }] of totals) means.set(index, ms / runs);
  // A dropped case's remaining turns are skipped, so they cost nothing.
  for (const index of dead) means.set(index, 0);
  return means;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
