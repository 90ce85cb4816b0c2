// A strict reader of Prometheus' text exposition format (0.0.4) for the metrics-contract tests.
// parse-prometheus-text-format (the dev dependency) reads counters and gauges well but folds a
// histogram's series into one bucket map and drops their labels, _sum and _count, so histograms
// need this one; the tests cross-check the two on every other family. Anything the format does
// not allow is an error here rather than skipped: a TYPE after its samples, a sample outside its
// family, a duplicate series, a malformed label, histogram buckets that are not cumulative.

export type FamilyType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface PromSample {
  /** The sample's own name (a histogram's `_bucket`, `_sum`, `_count` included). */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface PromFamily {
  readonly name: string;
  readonly type: FamilyType;
  readonly help: string;
  readonly samples: PromSample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES: readonly FamilyType[] = ['counter', 'gauge', 'histogram', 'summary', 'untyped'];
const SUFFIXES: Readonly<Record<FamilyType, readonly string[]>> = {
  counter: ['', '_total'],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

function fail(line: number, message: string): never {
  throw new Error(`exposition line ${line}: ${message}`);
}

/** As Prometheus reads values (Go's ParseFloat): Inf and NaN in any case (prom-client writes `Nan`). */
function parseValue(text: string, line: number): number {
  const special = text.toLowerCase();
  if (special === '+inf' || special === 'inf') return Number.POSITIVE_INFINITY;
  if (special === '-inf') return Number.NEGATIVE_INFINITY;
  if (special === 'nan') return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) fail(line, `not a number: '${text}'`);
  return Number(text);
}

/** `{a="x",b="y\"z"}` from position `at` (just after the name); the labels and where they end. */
function parseLabels(text: string, at: number, line: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  if (text[at] !== '{') return { labels, end: at };
  let i = at + 1;
  while (text[i] !== '}') {
    const eq = text.indexOf('=', i);
    if (eq < 0) fail(line, 'label without =');
    const name = text.slice(i, eq).trim();
    if (!LABEL_NAME.test(name)) fail(line, `bad label name '${name}'`);
    if (name in labels) fail(line, `label '${name}' twice`);
    if (text[eq + 1] !== '"') fail(line, `label '${name}' value not quoted`);
    let value = '';
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] !== '\\') {
        value += text[j];
        continue;
      }
      const escaped = text[++j];
      if (escaped === 'n') value += '\n';
      else if (escaped === '\\' || escaped === '"') value += escaped;
      else fail(line, `bad escape \\${escaped}`);
    }
    if (j >= text.length) fail(line, `label '${name}' value not closed`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (text[i] !== '}') fail(line, 'labels not separated by ,');
  }
  return { labels, end: i + 1 };
}

function checkHistogram(family: PromFamily): void {
  const series = new Map<string, PromSample[]>();
  for (const s of family.samples) {
    const { le: _le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    series.set(key, [...(series.get(key) ?? []), s]);
  }
  for (const [key, samples] of series) {
    const buckets = samples.filter((s) => s.name.endsWith('_bucket'));
    const count = samples.find((s) => s.name.endsWith('_count'));
    if (!count || !samples.some((s) => s.name.endsWith('_sum'))) throw new Error(`${family.name}${key}: histogram without _sum or _count`);
    if (buckets.some((b) => b.labels.le === undefined)) throw new Error(`${family.name}${key}: bucket without le`);
    const sorted = [...buckets].sort((a, b) => parseValue(a.labels.le!, 0) - parseValue(b.labels.le!, 0));
    if (sorted.at(-1)?.labels.le !== '+Inf') throw new Error(`${family.name}${key}: no +Inf bucket`);
    for (let i = 1; i < sorted.length; i++) if (sorted[i]!.value < sorted[i - 1]!.value) throw new Error(`${family.name}${key}: buckets not cumulative`);
    if (sorted.at(-1)!.value !== count.value) throw new Error(`${family.name}${key}: +Inf bucket ≠ _count`);
  }
}

/** Every family of an exposition, by name. */
export function parsePrometheusText(text: string): Map<string, PromFamily> {
  const families = new Map<string, PromFamily>();
  const seen = new Set<string>();
  let current: PromFamily | undefined;
  const helps = new Map<string, string>();
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    if (raw.startsWith('# HELP ')) {
      const [name, ...help] = raw.slice(7).split(' ');
      helps.set(name!, help.join(' '));
      return;
    }
    if (raw.startsWith('# TYPE ')) {
      const [name, type, ...extra] = raw.slice(7).split(' ');
      if (!NAME.test(name ?? '') || !TYPES.includes(type as FamilyType) || extra.length > 0) fail(line, `bad TYPE line '${raw}'`);
      if (families.has(name!)) fail(line, `TYPE of ${name} twice, or after its samples`);
      current = { name: name!, type: type as FamilyType, help: helps.get(name!) ?? '', samples: [] };
      families.set(name!, current);
      return;
    }
    if (raw.startsWith('#')) return;
    const nameEnd = raw.search(/[{ ]/);
    const name = raw.slice(0, nameEnd);
    if (!NAME.test(name)) fail(line, `bad metric name '${name}'`);
    const { labels, end } = parseLabels(raw, nameEnd, line);
    const [value, timestamp, ...rest] = raw.slice(end).trim().split(/\s+/);
    if (value === undefined || rest.length > 0 || (timestamp !== undefined && !/^-?\d+$/.test(timestamp))) fail(line, `bad sample '${raw}'`);
    if (!current || !SUFFIXES[current.type].some((suffix) => `${current!.name}${suffix}` === name)) fail(line, `sample ${name} outside its family (${current?.name ?? 'none'})`);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) fail(line, `duplicate series ${key}`);
    seen.add(key);
    current.samples.push({ name, labels, value: parseValue(value, line) });
  });
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

/** The label names a family's series carry (a histogram's le aside), as sorted lists, one per distinct set. */
export function labelSets(family: PromFamily): string[][] {
  const sets = new Set(
    family.samples.map((s) =>
      JSON.stringify(
        Object.keys(s.labels)
          .filter((k) => k !== 'le')
          .sort(),
      ),
    ),
  );
  return [...sets].map((s) => JSON.parse(s) as string[]);
}
