// A metric family whose samples are computed when Prometheus scrapes, from whatever the server's
// snapshots say at that instant. prom-client's own metric classes hold state that code must keep
// updating; these hold none, so the numbers cannot drift from the statistics endpoint, and a
// model that is unloaded simply stops appearing.

import type { Metric, Registry } from 'prom-client';
import type { MetricDefinition } from './metric-definitions.js';

export type Labels = Readonly<Record<string, string>>;

/** One exported sample; `suffix` is `_bucket`, `_sum` or `_count` for histogram parts. */
export interface Sample {
  readonly labels: Labels;
  readonly value: number;
  readonly suffix?: string;
}

export class SnapshotFamily {
  // Plain fields, not getters: prom-client's registry reads them and, for OpenMetrics output,
  // rewrites `name` in place.
  name: string;
  readonly help: string;
  readonly type: string;
  /** How prom-client's cluster aggregation would combine workers' values; unused by a single registry. */
  readonly aggregator = 'sum';

  constructor(
    definition: MetricDefinition,
    private readonly read: () => readonly Sample[],
  ) {
    this.name = definition.name;
    this.help = definition.help;
    this.type = definition.kind;
  }

  /** The shape prom-client's Registry renders (metricName overrides the family name per sample). */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: { labels: Labels; value: number; metricName: string }[] }> {
    const values = this.read().map((s) => ({ labels: s.labels, value: s.value, metricName: `${this.name}${s.suffix ?? ''}` }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Nothing to reset: there is no stored state. */
  reset(): void {}

  register(registry: Registry): this {
    // The registry needs only name, get() and reset(); its typings list prom-client's own classes.
    registry.registerMetric(this as unknown as Metric);
    return this;
  }
}

/**
 * Samples of a Prometheus histogram from exact counts per observed value (`counts` maps a value
 * to how many times it was observed): cumulative `_bucket`s per upper bound, `+Inf`, `_sum`, `_count`.
 */
export function histogramSamples(labels: Labels, buckets: readonly number[], counts: ReadonlyMap<number, number>): Sample[] {
  let total = 0;
  let sum = 0;
  for (const [value, n] of counts) {
    total += n;
    sum += value * n;
  }
  const samples: Sample[] = buckets.map((le) => {
    let below = 0;
    for (const [value, n] of counts) if (value <= le) below += n;
    return { labels: { ...labels, le: String(le) }, value: below, suffix: '_bucket' };
  });
  samples.push({ labels: { ...labels, le: '+Inf' }, value: total, suffix: '_bucket' });
  samples.push({ labels, value: sum, suffix: '_sum' }, { labels, value: total, suffix: '_count' });
  return samples;
}
