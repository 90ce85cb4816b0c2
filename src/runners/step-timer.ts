// Where a runner's step time goes (RunnerStats): each runner times its phases through one of
// these, so the breakdown means the same for every runner and the bench compares them phase by
// phase.

import { emptyBreakdown, type RunnerStats, type StepBreakdown } from './model-runner.js';

type TimedPhase = Exclude<keyof StepBreakdown, 'gatheredPositions'>;

/** Phases that move KV between the block pool and model tensors (RunnerStats.lastStepCopyMs). */
const COPY_PHASES: ReadonlySet<keyof StepBreakdown> = new Set(['gatherMs', 'scatterMs']);

export class StepTimer {
  readonly stats: RunnerStats = { lastStepCalls: 0, lastStepCopyMs: 0, reusedPastCalls: 0, lastStep: emptyBreakdown(), total: emptyBreakdown() };

  /** Starts a step: the last step's counters restart, the totals keep running. */
  beginStep(): void {
    this.stats.lastStepCalls = 0;
    this.stats.lastStepCopyMs = 0;
    Object.assign(this.stats.lastStep, emptyBreakdown());
  }

  /** Runs `work`, adding its time to the phase in both the last step's and the running totals. */
  timed<T>(phase: TimedPhase, work: () => T): T {
    const started = performance.now();
    try {
      return work();
    } finally {
      this.record(phase, performance.now() - started);
    }
  }

  /** Times a model call (ortMs) and counts it. */
  async call<T>(run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await run();
    } finally {
      this.record('ortMs', performance.now() - started);
      this.stats.lastStepCalls += 1;
    }
  }

  record(phase: keyof StepBreakdown, amount: number): void {
    this.stats.lastStep[phase] += amount;
    this.stats.total[phase] += amount;
    if (COPY_PHASES.has(phase)) this.stats.lastStepCopyMs += amount;
  }
}
