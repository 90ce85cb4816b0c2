// The exposition writer against prom-client's own: for random registries (counters, gauges and
// histograms with and without labels, label values that need escaping, NaN and infinities, HELP
// texts with backslashes and line feeds, snapshot families) and random changes between scrapes
// (new series, removed series, more observations), every scrape is byte for byte what
// Registry.metrics() writes, NaN spelled as the format spells it. A second naming gives the same
// lines under the renamed family names.
import fc from 'fast-check';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SnapshotFamily, histogramSamples } from '../../../src/metrics/snapshot-family.js';
import { AS_REGISTERED, writeExpositions } from '../../../src/metrics/text-format.js';
import { parseExposition } from './exposition.js';

const LABEL_NAMES = ['model_name', 'le_not', 'reason', 'version'] as const;
const labelValue = fc.oneof(fc.constantFrom('qwen3-tiny', 'a"b', 'back\\slash', 'two\nlines', '', 'é ✓'), fc.string({ maxLength: 6 }));
const sampleValue = fc.oneof(fc.integer({ min: -1e6, max: 1e6 }), fc.double({ noNaN: false }), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0.1 + 0.2, 1e-9, 5e21));
const helpText = fc.oneof(fc.constant('Plain help.'), fc.constantFrom('with \\ backslash', 'with\nline feed', 'quote " kept'), fc.string({ minLength: 1, maxLength: 12 }));

interface MetricPlan {
  readonly kind: 'counter' | 'gauge' | 'histogram';
  readonly help: string;
  readonly labelNames: readonly string[];
}

const metricPlan: fc.Arbitrary<MetricPlan> = fc.record({
  kind: fc.constantFrom('counter' as const, 'gauge' as const, 'histogram' as const),
  help: helpText,
  labelNames: fc.subarray([...LABEL_NAMES]),
});

/** One change to one metric: a value for a label set, or the removal of a label set. */
interface Change {
  readonly metric: number;
  readonly labels: readonly string[];
  readonly value: number;
  readonly remove: boolean;
}

const change: fc.Arbitrary<Change> = fc.record({
  metric: fc.nat(),
  labels: fc.array(labelValue, { minLength: LABEL_NAMES.length, maxLength: LABEL_NAMES.length }),
  value: sampleValue,
  remove: fc.boolean(),
});

type Built = Counter | Gauge | Histogram;

function build(registry: Registry, plans: readonly MetricPlan[]): Built[] {
  return plans.map((plan, i) => {
    const config = { name: `test:family_${i}`, help: plan.help, labelNames: [...plan.labelNames], registers: [registry] };
    if (plan.kind === 'counter') return new Counter(config);
    if (plan.kind === 'gauge') return new Gauge(config);
    return new Histogram({ ...config, buckets: [0.005, 0.1, 1, 2.5, 100] });
  });
}

function apply(metrics: readonly Built[], plans: readonly MetricPlan[], c: Change): void {
  const index = c.metric % metrics.length;
  const metric = metrics[index]!;
  const labels = Object.fromEntries(plans[index]!.labelNames.map((name, i) => [name, c.labels[i]!]));
  if (c.remove) {
    if (plans[index]!.labelNames.length > 0) metric.remove(labels);
    return;
  }
  if (metric instanceof Counter) metric.inc(labels, Number.isFinite(c.value) ? Math.abs(c.value) : 1);
  else if (metric instanceof Gauge) metric.set(labels, c.value);
  else if (Number.isFinite(c.value)) metric.observe(labels, c.value);
}

/** The registry's exposition under its registered names. */
const writeExposition = (registry: Registry): Promise<string> => writeExpositions([{ registry, namings: [AS_REGISTERED] }]);

/** prom-client's text with NaN as the format spells it (prom-client writes `Nan`). */
const promClientText = async (registry: Registry): Promise<string> => (await registry.metrics()).replace(/ Nan$/gm, ' NaN');

describe('the exposition writer', () => {
  it('writes what prom-client writes, scrape after scrape, while series come and go', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(metricPlan, { minLength: 1, maxLength: 5 }), fc.array(fc.array(change, { maxLength: 12 }), { minLength: 1, maxLength: 4 }), async (plans, rounds) => {
        const registry = new Registry();
        const metrics = build(registry, plans);
        for (const round of rounds) {
          for (const c of round) apply(metrics, plans, c);
          expect(await writeExposition(registry)).toBe(await promClientText(registry));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('writes snapshot families as prom-client does, histogram parts included', async () => {
    const registry = new Registry();
    const counts = new Map([
      [1, 2],
      [5, 1],
      [8, 4],
    ]);
    new SnapshotFamily({ name: 'nv_inference_batch_size', help: 'Batch sizes.', kind: 'histogram' } as never, () => histogramSamples({ model: 'resnet', version: '1' }, [1, 2, 4, 8], counts)).register(
      registry,
    );
    new SnapshotFamily({ name: 'nv_inference_count', help: 'Inferences.', kind: 'counter' } as never, () => [{ labels: { model: 'a"b', version: '1' }, value: 14 }]).register(registry);
    expect(await writeExposition(registry)).toBe(await registry.metrics());
  });

  it('writes every naming from one reading, the same samples under the renamed families', async () => {
    const registry = new Registry();
    const ttft = new Histogram({ name: 'conveyor:time_to_first_token_seconds', help: 'TTFT.', labelNames: ['model_name'], buckets: [0.1, 1], registers: [registry] });
    const running = new Gauge({ name: 'conveyor:num_requests_running', help: 'Running.', labelNames: ['model_name'], registers: [registry] });
    ttft.observe({ model_name: 'conveyor:tricky' }, 0.5);
    running.set({ model_name: 'm' }, 3);
    const renamed = (name: string): string => name.replace(/^conveyor:/, 'vllm:');
    const own = await registry.metrics();
    const both = await writeExpositions([{ registry, namings: [AS_REGISTERED, renamed] }]);
    // The registry's own text, a blank line, then the renamed copy.
    expect(both.startsWith(`${own.trimEnd()}\n\n`)).toBe(true);
    const copy = both.slice(own.length + 1);
    const ownSamples = parseExposition(own).samples;
    expect(parseExposition(copy).samples).toEqual(ownSamples.map((s) => ({ ...s, name: renamed(s.name) })));
    expect(copy).toContain('# TYPE vllm:time_to_first_token_seconds histogram');
    expect(copy).toContain('model_name="conveyor:tricky"');
    expect(copy).not.toMatch(/^conveyor:/m);
  });
});
