// Turns the structured-output benchmark's observations into per-case metrics, the summary's tables
// (targets last) and its charts. Throughput is output tokens over each run's wall time (median of
// the runs); mask time comes from the step messages; compile percentiles pool every run's schemas.
// Targets are reported, not asserted: this machine's load decides too much of them.

import type { ChartRequest } from '../../harness/charts.js';
import { formatMs, formatRate, markdownTable, resultsTable } from '../../harness/markdown.js';
import { percentile } from '../../harness/stats.js';
import type { CaseResult } from '../../harness/types.js';
import { medianOf } from '../engine/workload.js';
import { GROUP, VARIANT, type Observed } from './cases.js';
import type { StructuredBenchConfig } from './config.js';

export const TARGETS = { throughputShare: 0.9, coldCompileP99Ms: 1000 } as const;

type Metrics = Record<string, number>;

export interface Conclusion {
  readonly metrics: Map<string, Metrics>;
  readonly notes: string[];
  readonly results: string;
}

export function conclude(results: readonly CaseResult[], observed: Observed, config: StructuredBenchConfig, baseline: string): Conclusion {
  const metrics = new Map<string, Metrics>();
  for (const r of results) metrics.set(r.id, r.group === GROUP.compile ? compileMetrics(observed, r.id) : throughputMetrics(observed, r.id));
  const metric = (group: string, variant: string, point: string, name: string): number => {
    const hit = results.find((r) => r.group === group && r.variant === variant && r.point === point);
    return hit ? (metrics.get(hit.id)?.[name] ?? NaN) : NaN;
  };
  const rate = (variant: string, c: number) => metric(GROUP.throughput, variant, `c${c}`, 'tokPerSec');
  const top = Math.max(...config.concurrency);
  const compilePoint = `${config.schemaCount} schemas`;
  const share = rate(VARIANT.constrained, top) / rate(VARIANT.unconstrained, top);
  const coldP99 = metric(GROUP.compile, VARIANT.cold, compilePoint, 'p99Ms');
  const targets = [
    { name: `constrained / unconstrained tok/s at c${top}`, aim: `≥ ${percent(TARGETS.throughputShare)}`, measured: percent(share), met: verdict(share >= TARGETS.throughputShare, share) },
    { name: 'compile p99, cold', aim: `< ${TARGETS.coldCompileP99Ms} ms`, measured: `${fmt(coldP99)} ms`, met: verdict(coldP99 < TARGETS.coldCompileP99Ms, coldP99) },
  ];
  const throughputRows = config.concurrency.map((c) => {
    const at = (name: string) => metric(GROUP.throughput, VARIANT.constrained, `c${c}`, name);
    return [
      String(c),
      fmtRate(rate(VARIANT.unconstrained, c)),
      fmtRate(rate(VARIANT.constrained, c)),
      percent(rate(VARIANT.constrained, c) / rate(VARIANT.unconstrained, c)),
      `${fmt(at('maskMsPerStep'))} / ${fmt(at('maskMsPerStepMean'))} / ${fmt(at('maskMsPerStepP99'))}`,
      fmt(at('maskMsPerToken')),
      percent(at('maskShareOfWall')),
      percent(at('waitShareOfWall')),
      percent(at('refusedShare')),
    ];
  });
  const compileRows = [VARIANT.cold, VARIANT.cached].map((variant) => {
    const at = (name: string) => metric(GROUP.compile, variant, compilePoint, name);
    return [variant, String(at('compiles')), fmt(at('p50Ms')), fmt(at('p90Ms')), fmt(at('p99Ms')), fmt(at('maxMs')), fmt(at('openMs'))];
  });
  const sections = [
    '### Throughput: every request constrained by a JSON schema vs none',
    '',
    markdownTable(
      [
        'Concurrency',
        'Unconstrained tok/s',
        'JSON schema tok/s',
        'Constrained / unconstrained',
        'Mask ms per masked step (median / mean / p99)',
        'Mask ms per token (mean)',
        'Mask work / wall time',
        'Steps waiting on the grammar worker / wall time',
        'Greedy rows whose grammar took none of their candidates (then masked)',
      ],
      throughputRows,
      ['right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
    '',
    '### Compile time over the schema set',
    '',
    markdownTable(['Engine', 'Compiles', 'p50 ms', 'p90 ms', 'p99 ms', 'Max ms', 'Tokenizer info ms (fresh engine)'], compileRows, ['left', 'right', 'right', 'right', 'right', 'right', 'right']),
    '',
    '### Every case',
    '',
    resultsTable(results, baseline),
    '',
    '### Targets',
    '',
    markdownTable(
      ['Target', 'Aim', 'Measured', 'Met'],
      targets.map((t) => [t.name, t.aim, t.measured, t.met]),
      ['left', 'left', 'right', 'left'],
    ),
  ];
  const notes = targets.map((t) => `${t.name}: ${t.measured} (aim ${t.aim}) — ${t.met}`);
  for (const c of config.concurrency) {
    const at = (name: string) => metric(GROUP.throughput, VARIANT.constrained, `c${c}`, name);
    notes.push(
      `c${c}: constrained/unconstrained ${percent(rate(VARIANT.constrained, c) / rate(VARIANT.unconstrained, c))}, mask ${fmt(at('maskMsPerStep'))} ms median (${fmt(at('maskMsPerStepMean'))} mean, ${fmt(at('maskMsPerStepP99'))} p99) per masked step, ${fmt(at('maskMsPerToken'))} ms per token`,
    );
  }
  return { metrics, notes, results: sections.join('\n') };
}

const ratioOf = (part: number, whole: number): number => (whole > 0 ? part / whole : NaN);

function throughputMetrics(observed: Observed, id: string): Metrics {
  const runs = observed.throughput.get(id) ?? [];
  const masks = runs.reduce((sum, r) => sum + r.masks.masks, 0);
  const maskMs = runs.reduce((sum, r) => sum + r.masks.maskMs, 0);
  const waitMs = runs.reduce((sum, r) => sum + r.masks.waitMs, 0);
  const wallMs = runs.reduce((sum, r) => sum + r.wallMs, 0);
  const maskedSteps = runs.reduce((sum, r) => sum + r.masks.maskedSteps, 0);
  const sortedSteps = runs.flatMap((r) => r.masks.stepMaskMs).sort((a, b) => a - b);
  return {
    runs: runs.length,
    outputTokens: runs.reduce((sum, r) => sum + r.outputTokens, 0),
    tokPerSec: medianOf(runs.map((r) => (r.outputTokens * 1000) / r.wallMs)),
    steps: runs.reduce((sum, r) => sum + r.masks.steps, 0),
    maskedSteps,
    masks,
    maskMs,
    maskMsPerStep: medianOf(runs.flatMap((r) => r.masks.stepMaskMs)),
    maskMsPerStepMean: maskedSteps > 0 ? maskMs / maskedSteps : NaN,
    maskMsPerStepP99: maskedSteps > 0 ? percentile(sortedSteps, 99) : NaN,
    maskMsPerToken: masks > 0 ? maskMs / masks : NaN,
    // Masks run on the grammar worker during the forward pass: maskMs is the work, waitMs the part
    // of it the steps still waited for (the rest was hidden behind ORT).
    maskShareOfWall: wallMs > 0 ? maskMs / wallMs : NaN,
    waitMs,
    waitShareOfWall: wallMs > 0 ? waitMs / wallMs : NaN,
    // Greedy rows try their best unmasked candidates first; the share whose grammar took none is what still needed a mask.
    tried: runs.reduce((sum, r) => sum + r.masks.tried, 0),
    refused: runs.reduce((sum, r) => sum + r.masks.refused, 0),
    refusedShare: ratioOf(
      runs.reduce((sum, r) => sum + r.masks.refused, 0),
      runs.reduce((sum, r) => sum + r.masks.tried, 0),
    ),
  };
}

function compileMetrics(observed: Observed, id: string): Metrics {
  const runs = observed.compile.get(id) ?? [];
  const all = runs.flatMap((r) => r.compileMs).sort((a, b) => a - b);
  const opens = runs.flatMap((r) => (r.openMs === null ? [] : [r.openMs]));
  if (all.length === 0) return { runs: runs.length, compiles: 0 };
  return {
    runs: runs.length,
    compiles: all.length,
    p50Ms: percentile(all, 50),
    p90Ms: percentile(all, 90),
    p99Ms: percentile(all, 99),
    maxMs: all.at(-1)!,
    openMs: medianOf(opens),
  };
}

export function structuredCharts(config: StructuredBenchConfig, label: string): ChartRequest[] {
  return [
    {
      kind: 'line',
      file: 'structured-throughput.svg',
      title: `${label}: output tokens/s vs concurrent requests, JSON schema vs unconstrained (prompt ${config.promptTokens}, output ${config.outputTokens})`,
      xLabel: 'concurrent requests',
      yLabel: 'tokens/s',
      logX: true,
      select: (r) => r.group === GROUP.throughput,
      seriesOf: (r) => r.variant,
      x: (r) => Number(r.params['concurrency']),
      y: (r) => num(r.metrics?.['tokPerSec']),
    },
    {
      kind: 'bar',
      file: 'structured-compile.svg',
      title: `${label} tokenizer: compile p99 ms over ${config.schemaCount} schemas, fresh vs warm GrammarEngine`,
      yLabel: 'ms',
      select: (r) => r.group === GROUP.compile,
      seriesOf: (r) => r.variant,
      value: (r) => num(r.metrics?.['p99Ms']),
    },
  ];
}

const num = (value: unknown): number => (typeof value === 'number' ? value : NaN);
const fmt = (ms: number): string => (Number.isFinite(ms) ? formatMs(ms) : '–');
const fmtRate = (x: number): string => (Number.isFinite(x) ? formatRate(x) : '–');
const percent = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : '–');
const verdict = (met: boolean, value: number): string => (Number.isFinite(value) ? (met ? 'met' : 'missed') : 'not measured');
