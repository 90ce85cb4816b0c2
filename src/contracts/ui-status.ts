// GET /ui/api/status, what the dashboard polls: plain JSON shapes declared once, for the server
// (src/metrics/families.ts reads the registry into them, src/server/ui/recent-errors.ts keeps
// the errors, routes/ui.ts answers) and for the browser code under ui/src, which imports these
// types (erased from its bundle).

export interface MetricSample {
  /** The series name: the family's, or `<family>_bucket|_sum|_count` for a histogram. */
  readonly name: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

/** One metric family: every sample of it, histogram buckets included. */
export interface MetricFamily {
  readonly name: string;
  readonly type: string;
  readonly samples: readonly MetricSample[];
}

/** A refused or failed HTTP request, as the "recent errors" panel lists it. */
export interface RecentError {
  readonly time_ms: number;
  readonly method: string;
  /** The path without its query (a query may carry a prompt or a key-like value). */
  readonly path: string;
  readonly status: number;
  readonly message: string;
}

/** What GET /ui/api/status answers. */
export interface UiStatus {
  readonly time_ms: number;
  readonly metrics: readonly MetricFamily[];
  readonly errors: readonly RecentError[];
}
