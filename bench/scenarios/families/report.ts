// The families run's tables, from plain records: what each conversion cost against the
// checkpoint it read, and each family's served output tok/s as a ratio to the bench decoder
// measured in the same run. Pure, so test/unit/bench/families-report.test.ts checks it without a model.

import { formatRate, markdownTable, type Align } from '../../harness/markdown.js';

export interface ConversionRecord {
  readonly family: string;
  /** e.g. 'fp32 --paged'. */
  readonly variant: string;
  /** The safetensors files the conversion read. */
  readonly checkpointBytes: number;
  readonly parameters: number | undefined;
  /** Everything the conversion wrote. */
  readonly outputBytes: number;
  readonly wallS: number;
  /** The conversion process's own peak resident set (GNU time's %M); null where it could not be had. */
  readonly peakRssBytes: number | null;
}

export interface ServingRecord {
  /** A family, or a baseline group (BASELINE_PREFIX…). */
  readonly group: string;
  readonly backend: string;
  readonly concurrency: number;
  readonly outputTokS: number;
  readonly failed: number;
}

/** Groups that are the in-run baseline (the bench decoder, served at the start and again at the end). */
export const BASELINE_PREFIX = 'baseline';

export const isBaseline = (group: string): boolean => group.startsWith(BASELINE_PREFIX);

export function formatBytes(bytes: number): string {
  const mib = bytes / 2 ** 20;
  return mib >= 1024 ? `${(mib / 1024).toFixed(2)} GiB` : `${mib.toFixed(0)} MiB`;
}

/** The baseline's output tok/s at a backend and concurrency: the mean of its runs (start, end). */
export function baselineTokS(records: readonly ServingRecord[], backend: string, concurrency: number): number | undefined {
  const runs = records.filter((r) => isBaseline(r.group) && r.backend === backend && r.concurrency === concurrency);
  return runs.length === 0 ? undefined : runs.reduce((sum, r) => sum + r.outputTokS, 0) / runs.length;
}

/** family / baseline tok/s, undefined without a baseline. */
export function ratioToBaseline(records: readonly ServingRecord[], record: ServingRecord): number | undefined {
  const base = baselineTokS(records, record.backend, record.concurrency);
  return base === undefined || base <= 0 ? undefined : record.outputTokS / base;
}

/** Largest relative difference between the baseline's runs at one point: how much the machine drifted over the run. */
export function baselineDrift(records: readonly ServingRecord[]): { backend: string; concurrency: number; spread: number }[] {
  const points = unique(records.filter((r) => isBaseline(r.group)).map((r) => `${r.backend}\u0000${r.concurrency}`));
  return points.flatMap((key) => {
    const [backend, c] = key.split('\u0000') as [string, string];
    const values = records.filter((r) => isBaseline(r.group) && r.backend === backend && r.concurrency === Number(c)).map((r) => r.outputTokS);
    if (values.length < 2) return [];
    return [{ backend, concurrency: Number(c), spread: (Math.max(...values) - Math.min(...values)) / Math.min(...values) }];
  });
}

/** One conversion as a line (results.json's settings keep them so). */
export function conversionLine(r: ConversionRecord): string {
  const rss = r.peakRssBytes === null ? 'peak RSS ?' : `peak RSS ${formatBytes(r.peakRssBytes)}`;
  return `${r.family} ${r.variant}: ${r.wallS.toFixed(1)} s, ${rss}, checkpoint ${formatBytes(r.checkpointBytes)} (${r.checkpointBytes} B), written ${formatBytes(r.outputBytes)}`;
}

export function conversionTable(records: readonly ConversionRecord[]): string {
  const headers = ['Family', 'Conversion', 'Parameters', 'Checkpoint (bf16)', 'Written', 'Wall s', 'Peak RSS', 'Peak RSS / checkpoint'];
  const align: Align[] = ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right'];
  const rows = records.map((r) => [
    r.family,
    r.variant,
    r.parameters === undefined ? '–' : `${(r.parameters / 1e6).toFixed(1)} M`,
    formatBytes(r.checkpointBytes),
    formatBytes(r.outputBytes),
    r.wallS.toFixed(1),
    r.peakRssBytes === null ? '–' : formatBytes(r.peakRssBytes),
    r.peakRssBytes === null ? '–' : `${(r.peakRssBytes / r.checkpointBytes).toFixed(2)}×`,
  ]);
  return markdownTable(headers, rows, align);
}

/**
 * One row per group, columns per backend × concurrency: tok/s and, for families, × the baseline's
 * mean at the same backend and concurrency.
 */
export function servingTable(records: readonly ServingRecord[]): string {
  const backends = unique(records.map((r) => r.backend));
  const points = unique(records.map((r) => r.concurrency)).sort((a, b) => a - b);
  const columns = backends.flatMap((backend) => points.map((concurrency) => ({ backend, concurrency })));
  const headers = ['Family', ...columns.flatMap((c) => [`${c.backend} c${c.concurrency} tok/s`, `× base`])];
  const align: Align[] = ['left', ...columns.flatMap((): Align[] => ['right', 'right'])];
  const rows = unique(records.map((r) => r.group)).map((group) => [
    group,
    ...columns.flatMap((column) => {
      const hit = records.find((r) => r.group === group && r.backend === column.backend && r.concurrency === column.concurrency);
      if (!hit) return ['–', '–'];
      const ratio = isBaseline(group) ? undefined : ratioToBaseline(records, hit);
      const failed = hit.failed > 0 ? ` (${hit.failed} failed)` : '';
      return [`${formatRate(hit.outputTokS)}${failed}`, ratio === undefined ? '–' : `${ratio.toFixed(2)}×`];
    }),
  ]);
  return markdownTable(headers, rows, align);
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
