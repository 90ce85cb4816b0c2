// One benchmark invocation from parsed arguments to files on disk: prepare the scenario, run its
// cases interleaved, build the report, write it, and hand back the summary for stdout.

import type { CommonOptions } from './args.js';
import { machineInfo } from './machine.js';
import { defaultResultsDir, writeResults, type WrittenFiles } from './output.js';
import { Progress } from './progress.js';
import { buildResults } from './results.js';
import { runInterleaved } from './runner.js';
import type { FlagValues, Scenario } from './scenario.js';
import type { BenchReport } from './types.js';

export interface RunScenarioOptions {
  readonly common: CommonOptions;
  readonly flags: FlagValues;
  readonly stderr?: { write(text: string): unknown; isTTY?: boolean };
}

export async function runScenario(scenario: Scenario, options: RunScenarioOptions): Promise<WrittenFiles & { report: BenchReport }> {
  const { common } = options;
  const progress = new Progress(scenario.name, options.stderr ? { stream: options.stderr } : {});
  const startedAt = new Date();
  const started = performance.now();
  const prepared = await scenario.prepare({ flags: options.flags, quick: common.quick, log: (message) => progress.log(message) });
  try {
    for (const s of prepared.skipped) progress.log(`skipped ${s.group} ${s.variant}${s.point ? ` ${s.point}` : ''}: ${s.reason}`);
    progress.log(`${prepared.cases.length} cases × (${common.warmup} warm-up + ${common.reps} measured), interleaved`);
    progress.restartClock();
    const outcome = await runInterleaved(prepared.cases, { reps: common.reps, warmup: common.warmup, progress });
    const measured = buildResults(prepared.cases, outcome.samplesMs, common.baseline);
    const conclusion = prepared.conclude?.(measured) ?? {};
    const report: BenchReport = {
      scenario: scenario.name,
      startedAt: startedAt.toISOString(),
      durationS: (performance.now() - started) / 1000,
      settings: { reps: common.reps, warmup: common.warmup, quick: common.quick, ...prepared.settings },
      baseline: common.baseline,
      machine: machineInfo(),
      notes: [...prepared.notes, ...(conclusion.notes ?? [])],
      cases: measured.map((c) => {
        const metrics = conclusion.metrics?.get(c.id);
        return metrics ? { ...c, metrics } : c;
      }),
      skipped: [...prepared.skipped, ...outcome.failed],
    };
    const written = await writeResults(common.out ?? defaultResultsDir(scenario.name, startedAt), report, prepared.charts, conclusion.results);
    return { ...written, report };
  } finally {
    await prepared.dispose();
  }
}
