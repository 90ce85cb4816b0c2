// The shapes every scenario and the harness agree on. A case is one thing to time; cases that
// share a group and a point are the same workload run by different variants, and only those are
// compared with each other (a ratio between a decoder step and a CNN batch would mean nothing).

import type { Stats } from './stats.js';

export type ParamValue = number | string | boolean;

export interface CaseInfo {
  /** What ratios stay within, e.g. the model family 'qwen3'. */
  readonly group: string;
  /** What is being compared, e.g. 'fp32' vs 'int8'; the baseline is one of these. */
  readonly variant: string;
  /** The workload, e.g. 'decode b8'. */
  readonly point: string;
  /** Shape and settings of the workload, kept in results.json and used for chart axes. */
  readonly params: Readonly<Record<string, ParamValue>>;
  /** Work done by one run, for throughput (e.g. 8 tokens per decode step at batch 8). */
  readonly work?: { readonly count: number; readonly unit: string };
}

/** Which turn a run is; a case that measures inside run() (a load window) keeps warm-up apart by it. */
export interface RunSlot {
  readonly warmup: boolean;
  readonly rep: number;
}

export interface BenchCase extends CaseInfo {
  /** One timed repetition. Anything it needs is built before the run starts. */
  run(slot?: RunSlot): unknown;
}

export interface SkippedCase {
  readonly group: string;
  readonly variant: string;
  /** Absent when every point of the variant was skipped. */
  readonly point?: string;
  readonly reason: string;
}

export interface CaseResult extends CaseInfo {
  readonly id: string;
  /** Wall time of every measured run, in ms, in the order they ran (warm-up excluded). */
  readonly samplesMs: readonly number[];
  readonly stats: Stats;
  /** work.count per second at the median time. */
  readonly throughput?: { readonly perSecond: number; readonly unit: string };
  /** median / median of the baseline variant at the same group and point. */
  readonly ratio?: number;
  /** Numbers the scenario measured itself (see PreparedScenario.conclude), e.g. a load window's latencies. */
  readonly metrics?: Readonly<Record<string, unknown>>;
}

export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly platform: string;
  readonly arch: string;
  readonly node: string;
  readonly onnxruntime: string;
  readonly gitCommit: string;
  readonly gitDirty: boolean | null;
}

export interface BenchReport {
  readonly scenario: string;
  readonly startedAt: string;
  readonly durationS: number;
  readonly settings: Readonly<Record<string, unknown>>;
  readonly baseline: string;
  readonly machine: MachineInfo;
  readonly notes: readonly string[];
  readonly cases: readonly CaseResult[];
  readonly skipped: readonly SkippedCase[];
}

export function caseId(info: Pick<CaseInfo, 'group' | 'variant' | 'point'>): string {
  return `${info.group} ${info.variant} ${info.point}`;
}
