// Turns raw samples into per-case results: statistics, throughput at the median, and the ratio
// against the baseline variant running the same workload.

import { ratio, summarize } from './stats.js';
import { caseId, type BenchCase, type CaseInfo, type CaseResult } from './types.js';

export function buildResults(cases: readonly BenchCase[], samplesMs: ReadonlyMap<number, readonly number[]>, baseline: string): CaseResult[] {
  const partial = cases.flatMap((benchCase, index) => {
    const samples = samplesMs.get(index);
    if (!samples || samples.length === 0) return [];
    const info = infoOf(benchCase);
    const stats = summarize(samples);
    const throughput = info.work ? { perSecond: info.work.count / (stats.median / 1000), unit: `${info.work.unit}/s` } : undefined;
    return [{ ...info, id: caseId(info), samplesMs: [...samples], stats, ...(throughput ? { throughput } : {}) }];
  });
  const baselineMedian = new Map<string, number>();
  for (const result of partial) {
    if (result.variant === baseline) baselineMedian.set(workloadKey(result), result.stats.median);
  }
  return partial.map((result) => {
    const r = ratio(result.stats.median, baselineMedian.get(workloadKey(result)));
    return r === undefined ? result : { ...result, ratio: r };
  });
}

function workloadKey(info: Pick<CaseInfo, 'group' | 'point'>): string {
  return `${info.group}\u0000${info.point}`;
}

/** The case without its run function: what goes into results.json. */
function infoOf(benchCase: BenchCase): CaseInfo {
  const { group, variant, point, params, work } = benchCase;
  return work ? { group, variant, point, params, work } : { group, variant, point, params };
}
