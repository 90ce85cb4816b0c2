// Every metric family of a registry as plain JSON, for the dashboard's status route: the same
// numbers /metrics renders (one registry answers both), read without the text round trip.

import type { Registry } from 'prom-client';
import type { MetricFamily } from '../contracts/ui-status.js';

export async function readFamilies(registry: Registry): Promise<MetricFamily[]> {
  const families = await registry.getMetricsAsJSON();
  return families.map((family) => ({
    name: family.name,
    type: String(family.type),
    samples: family.values.map((sample) => ({
      name: (sample as { metricName?: string }).metricName ?? family.name,
      labels: definedLabels(sample.labels),
      value: sample.value,
    })),
  }));
}

function definedLabels(labels: Partial<Record<string, string | number>>): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const [key, value] of Object.entries(labels)) if (value !== undefined) out[key] = value;
  return out;
}
