// Prometheus text exposition (format 0.0.4) of a prom-client registry, written here rather than by
// Registry.metrics(). The endpoint picker scrapes every 50 ms, also while the engine saturates the
// cores, and prom-client's writer spent about 60% of a scrape's CPU building arrays of label
// strings for every sample (each histogram bucket: its own label array, filter and join), and
// more in the garbage collector. This writer reads the same metric objects through the same
// calls and caches what does not change between scrapes: the label text of a series, keyed by the
// series' own labels object, which prom-client keeps for the life of the series.
//
// The bytes are prom-client's, sample for sample (a property test holds it to that), with one
// exception: NaN is written `NaN`, as the format spells it (prom-client writes `Nan`).

import type { Registry } from 'prom-client';

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

/** The registry's exposition, each family under its registered name. */
export async function writeExposition(registry: Registry): Promise<string> {
  const [text] = await writeExpositions(registry, [AS_REGISTERED]);
  return text!;
}

/**
 * The registry's exposition once per naming, from one reading of its metrics: the same samples
 * under each naming's family names (the vllm: copy of the conveyor: families), each line's labels
 * and value formatted once for all of them.
 */
export async function writeExpositions(registry: Registry, namings: readonly FamilyNaming[]): Promise<string[]> {
  const metrics = registry.getMetricsAsArray() as unknown as ReadableMetric[];
  const families = await Promise.all(metrics.map((m) => (typeof m.getForPromString === 'function' ? m.getForPromString() : m.get())));
  // Lines gathered and joined once: appending to one string would build a rope of thousands of
  // pieces that the socket write then has to flatten.
  const lines: string[][] = namings.map(() => []);
  for (let i = 0; i < families.length; i++) {
    const family = families[i]!;
    const help = escapeText(family.help);
    for (let n = 0; n < namings.length; n++) {
      const name = escapeText(namings[n]!(family.name));
      if (i > 0) lines[n]!.push('');
      lines[n]!.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${family.type}`);
    }
    const names = namings.map((naming) => naming(family.name));
    for (const sample of family.values ?? []) {
      const own = sample.labels === undefined ? '' : labelText(sample.labels, sample.sharedLabels);
      const shared = sample.sharedLabels === undefined ? '' : labelText(sample.sharedLabels, undefined);
      const labels = own === '' ? shared : shared === '' ? own : `${own},${shared}`;
      const rest = `${labels === '' ? '' : `{${labels}}`} ${valueText(sample.value)}`;
      const sampleName = sample.metricName;
      if (sampleName === undefined) {
        for (let n = 0; n < names.length; n++) lines[n]!.push(names[n]! + rest);
      } else if (sampleName.startsWith(family.name)) {
        // Histogram parts (_bucket, _sum, _count) extend their family's name.
        const suffix = sampleName.slice(family.name.length);
        for (let n = 0; n < names.length; n++) lines[n]!.push(names[n]! + suffix + rest);
      } else {
        for (let n = 0; n < names.length; n++) lines[n]!.push(namings[n]!(sampleName) + rest);
      }
    }
  }
  return lines.map((text) => `${text.join('\n')}\n`);
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
