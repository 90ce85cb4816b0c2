// Prometheus text exposition (format 0.0.4) of a prom-client registry, written here rather than by
// Registry.metrics(). The endpoint picker scrapes every 50 ms, also while the engine saturates the
// cores, and prom-client's writer spent about 60% of a scrape's CPU building arrays of label
// strings for every sample (each histogram bucket: its own label array, filter and join), and
// more in the garbage collector. This writer reads the same metric objects through the same
// calls and keeps what does not change between scrapes, keyed by the series' own labels object
// (which prom-client keeps for the life of the series): its label text, and each sample's whole
// line while the sample's value stays the same.
//
// The bytes are prom-client's, sample for sample (a property test holds it to that), with one
// exception: NaN is written `NaN`, as the format spells it (prom-client writes `Nan`).

import type { Registry } from 'prom-client';
import { SnapshotFamily } from './snapshot-family.js';

type LabelValue = string | number | undefined;
type LabelSet = Readonly<Record<string, LabelValue>>;

/** One sample as a prom-client metric's get() / getForPromString() reports it. */
interface ReportedSample {
  readonly value: number;
  readonly labels?: LabelSet;
  /** Labels the sample shares with its series (a histogram bucket's: everything but `le`). */
  readonly sharedLabels?: LabelSet;
  /** The sample's own name where it is not the family's (a histogram's _bucket, _sum, _count). */
  readonly metricName?: string;
}

interface ReportedFamily {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly values?: readonly ReportedSample[];
}

/** What this writer calls on a registered metric: prom-client's classes and SnapshotFamily both have it. */
interface ReadableMetric {
  get(): Promise<ReportedFamily> | ReportedFamily;
  /** Histograms: samples with `sharedLabels`, before they are splayed into one labels object each. */
  getForPromString?(): Promise<ReportedFamily> | ReportedFamily;
}

/** A family name as one rendering of a registry writes it. */
export type FamilyNaming = (name: string) => string;

export const AS_REGISTERED: FamilyNaming = (name) => name;

/** A registry and the names its families are written under, one copy of its text per naming. */
export interface ExpositionSource {
  readonly registry: Registry;
  readonly namings: readonly FamilyNaming[];
}

/**
 * One exposition of every source, each registry read once and written once per naming (the vllm:
 * copy of the conveyor: families: the same samples under the renamed families), in order.
 */
export async function writeExpositions(sources: readonly ExpositionSource[]): Promise<string> {
  const read = await Promise.all(sources.map((source) => readRegistry(source.registry)));
  // Lines gathered and joined once: appending to one string would build a rope of thousands of
  // pieces that the socket write then has to flatten.
  const lines: string[] = [];
  for (let i = 0; i < sources.length; i++) {
    const { namings } = sources[i]!;
    for (const naming of namings) {
      for (const [metric, family] of read[i]!) {
        if (lines.length > 0) lines.push('');
        familyLines(metric, family, naming, lines);
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

async function readRegistry(registry: Registry): Promise<[ReadableMetric, ReportedFamily][]> {
  const metrics = registry.getMetricsAsArray() as unknown as ReadableMetric[];
  const families = await Promise.all(metrics.map((m) => (typeof m.getForPromString === 'function' ? m.getForPromString() : m.get())));
  return metrics.map((metric, i) => [metric, families[i]!]);
}

/**
 * A sample's line as last written. A scrape every 50 ms finds most samples as the last
 * one left them (histogram buckets, counters of idle models), so their lines are reused rather than
 * formatted and allocated again: the scrape was the serving thread's largest source of garbage.
 */
interface CachedLine {
  readonly metricName: string | undefined;
  readonly le: LabelValue;
  readonly value: number;
  readonly line: string;
}

/**
 * Per naming, per metric, per series labels object (prom-client keeps one per series for its life;
 * a histogram's samples share theirs as `sharedLabels`), the series' lines by position.
 */
const lineCache = new WeakMap<FamilyNaming, WeakMap<ReadableMetric, WeakMap<LabelSet, CachedLine[]>>>();

function seriesCache(naming: FamilyNaming, metric: ReadableMetric): WeakMap<LabelSet, CachedLine[]> {
  let byMetric = lineCache.get(naming);
  if (byMetric === undefined) lineCache.set(naming, (byMetric = new WeakMap()));
  let bySeries = byMetric.get(metric);
  if (bySeries === undefined) byMetric.set(metric, (bySeries = new WeakMap()));
  return bySeries;
}

function familyLines(metric: ReadableMetric, family: ReportedFamily, naming: FamilyNaming, lines: string[]): void {
  const name = escapeText(naming(family.name));
  lines.push(`# HELP ${name} ${escapeText(family.help)}`, `# TYPE ${name} ${family.type}`);
  // A snapshot family builds new label objects at every read: nothing of it would be found again.
  const bySeries = metric instanceof SnapshotFamily ? undefined : seriesCache(naming, metric);
  let series: LabelSet | undefined;
  let position = 0;
  for (const sample of family.values ?? []) {
    const seriesLabels = sample.sharedLabels ?? sample.labels;
    position = seriesLabels === series ? position + 1 : 0;
    series = seriesLabels;
    const le = sample.sharedLabels === undefined ? undefined : sample.labels?.le;
    let cached = seriesLabels === undefined ? undefined : bySeries?.get(seriesLabels);
    const hit = cached?.[position];
    if (hit !== undefined && hit.value === sample.value && hit.le === le && hit.metricName === sample.metricName) {
      lines.push(hit.line);
      continue;
    }
    const line = sampleLine(sample, family.name, naming, name);
    lines.push(line);
    if (seriesLabels === undefined || bySeries === undefined) continue;
    if (cached === undefined) bySeries.set(seriesLabels, (cached = []));
    cached[position] = { metricName: sample.metricName, le, value: sample.value, line };
  }
}

function sampleLine(sample: ReportedSample, familyName: string, naming: FamilyNaming, name: string): string {
  const own = sample.labels === undefined ? '' : labelText(sample.labels, sample.sharedLabels);
  const shared = sample.sharedLabels === undefined ? '' : labelText(sample.sharedLabels, undefined);
  const labels = own === '' ? shared : shared === '' ? own : `${own},${shared}`;
  const sampleName = sample.metricName;
  // Histogram parts (_bucket, _sum, _count) extend their family's name.
  const written = sampleName === undefined ? name : sampleName.startsWith(familyName) ? name + sampleName.slice(familyName.length) : naming(sampleName);
  return `${written}${labels === '' ? '' : `{${labels}}`} ${valueText(sample.value)}`;
}

/**
 * `name="value",…` of a label set, without the labels `exclude` also has (prom-client's rule, so
 * a label in both is written once, from the shared set). Cached per labels object when nothing is
 * excluded: series' label objects live as long as their series, so a scrape formats only new ones.
 */
function labelText(labels: LabelSet, exclude: LabelSet | undefined): string {
  if (exclude === undefined) {
    const cached = labelTextCache.get(labels);
    if (cached !== undefined) return cached;
  }
  let text = '';
  for (const key in labels) {
    if (!Object.hasOwn(labels, key) || (exclude !== undefined && Object.hasOwn(exclude, key))) continue;
    const value = labels[key];
    if (text !== '') text += ',';
    text += `${key}="${typeof value === 'string' ? escapeLabelValue(value) : value}"`;
  }
  if (exclude === undefined) labelTextCache.set(labels, text);
  return text;
}

const labelTextCache = new WeakMap<LabelSet, string>();

const NEEDS_TEXT_ESCAPE = /[\\\n]/;
const NEEDS_LABEL_ESCAPE = /[\\\n"]/;

/** HELP text and names: backslash and line feed escaped. */
function escapeText(text: string): string {
  return NEEDS_TEXT_ESCAPE.test(text) ? text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n') : text;
}

/** Label values: backslash, line feed and double quote escaped. */
function escapeLabelValue(value: string): string {
  return NEEDS_LABEL_ESCAPE.test(value) ? escapeText(value).replace(/"/g, '\\"') : value;
}

function valueText(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return `${value}`;
}
