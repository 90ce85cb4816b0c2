// What a scenario gives the harness: its flags, and once prepared, the cases to time (with every
// model loaded and every input built), what it had to skip and why, and the charts to draw.

import type { ChartRequest } from './charts.js';
import type { BenchCase, CaseResult, SkippedCase } from './types.js';

export interface FlagSpec {
  readonly type: 'string' | 'boolean';
  /** Shown by --help, e.g. '--size tiny|bench'. */
  readonly usage: string;
  readonly description: string;
}

export type FlagValues = Readonly<Record<string, string | boolean | undefined>>;

export interface ScenarioContext {
  readonly flags: FlagValues;
  readonly quick: boolean;
  /** A line on stderr; stdout is kept for the summary. */
  readonly log: (message: string) => void;
}

export interface PreparedScenario {
  readonly cases: readonly BenchCase[];
  readonly skipped: readonly SkippedCase[];
  readonly charts: readonly ChartRequest[];
  readonly notes: readonly string[];
  /** Scenario settings recorded in results.json and the summary (shapes, threads, …). */
  readonly settings: Readonly<Record<string, unknown>>;
  /**
   * For scenarios whose numbers are not run times (a load test measures inside each run): called
   * once every run is done, before anything is written.
   */
  conclude?(cases: readonly CaseResult[]): ScenarioConclusion;
  dispose(): Promise<void>;
}

export interface ScenarioConclusion {
  /** By case id; stored on the case in results.json as `metrics`, and there for the charts. */
  readonly metrics?: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
  readonly notes?: readonly string[];
  /** Markdown that takes the place of the generic results table at the end of summary.md. */
  readonly results?: string;
}

export interface RunDefaults {
  readonly reps: number;
  readonly warmup: number;
}

export interface Scenario {
  readonly name: string;
  readonly description: string;
  readonly flags: Readonly<Record<string, FlagSpec>>;
  readonly defaults: { readonly full: RunDefaults; readonly quick: RunDefaults; readonly baseline: string };
  prepare(context: ScenarioContext): Promise<PreparedScenario>;
}
