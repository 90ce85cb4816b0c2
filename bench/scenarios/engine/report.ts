// Turns the engine benchmark's results and observations into per-case metrics, the summary's
// tables (targets last) and its charts. Throughput is the harness's (output tokens per second
// at the median run); step times, TTFT, cached tokens and KV waste come from the updates.

import { formatMs, formatRate, markdownTable, resultsTable } from '../../harness/markdown.js';
import type { ChartRequest } from '../../harness/charts.js';
import type { CaseResult } from '../../harness/types.js';
import { GROUP, VARIANT, prefillRowsFor, type Observations, type StepTimes } from './cases.js';
import type { EngineBenchConfig } from './config.js';
import { kvWaste, type KvWaste } from './kv-waste.js';
import type { StepProfile } from './profile.js';
import { concludeSweep, SWEEP_GROUP, type SweepObservations, type SweepQuality } from './context-sweep.js';
import { decodeStepMs, medianOf, mergeTraces, outputTokens, type WorkloadTrace } from './workload.js';

export const TARGETS = { floorShare: 0.8, batchingGain: 4, ttftGain: 5, kvWaste: 0.04 } as const;

type Metrics = Record<string, number | string | boolean>;

export interface Conclusion {
  readonly metrics: Map<string, Metrics>;
  readonly notes: string[];
  readonly results: string;
}

export interface Observed {
  readonly traces: Observations;
  readonly stepTimes: StepTimes;
}

export function conclude(
  results: readonly CaseResult[],
  observed: Observed,
  config: EngineBenchConfig,
  profile: readonly StepProfile[],
  baseline: string,
  sweepObserved: SweepObservations = new Map(),
  sweepQuality: SweepQuality = new Map(),
): Conclusion {
  const metrics = new Map<string, Metrics>();
  const kv = new Map<string, KvWaste>();
  for (const r of results) {
    const traces = observed.traces.get(r.id) ?? [];
    const m = r.group === GROUP.forward ? floorMetrics(r, observed.stepTimes.get(r.id) ?? []) : metricsOf(r, traces);
    if (r.group === GROUP.kv) {
      const waste = kvWaste(mergeTraces(traces), config.blockSize, config.maxModelLen);
      kv.set(r.id, waste);
      Object.assign(m, waste);
    }
    metrics.set(r.id, m);
  }
  const look = lookup(results, metrics);
  const top = Math.max(...config.concurrency);
  const sweep = concludeSweep(results, sweepObserved, config, sweepQuality);
  for (const [id, m] of sweep.metrics) metrics.set(id, { ...metrics.get(id), ...m });
  const sweepOnly = results.every((r) => r.group === SWEEP_GROUP);
  const targets = [...(sweepOnly ? [] : targetRows(config, look, top, [...kv.values()][0])), ...(config.sweep.length > 0 ? sweep.targets : [])];
  const sections = sweepOnly
    ? []
    : ['### Throughput and step time', '', throughputTable(config, look), '', '### Time to first token', '', ttftTable(results, metrics), '', '### KV cache waste', '', kvTable(kv), ''];
  if (profile.length > 0) sections.push('### Decode step profile (EngineCore driven directly, in a worker)', '', profileTable(profile), '');
  if (config.sweep.length > 0) sections.push(...sweep.sections);
  sections.push(
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
  );
  const notes = targets.map((t) => `${t.name}: ${t.measured} (aim ${t.aim}) — ${t.met}`);
  const bound = forwardOnlyRate(config, top, look) / look.floorRate(`decode b${top}`);
  if (!sweepOnly)
    notes.push(
      `at c${top} the forward passes alone (prefill calls + decode steps at the floor's medians) reach ${percent(bound)} of the decode floor: the prefill share bounds what the aggregate can reach`,
    );
  return { metrics, notes, results: sections.join('\n') };
}

/** A floor case: the median single call, and the tokens per second it gives. */
function floorMetrics(r: CaseResult, times: readonly number[]): Metrics {
  const stepMs = medianOf(times);
  const tokensPerCall = Number(r.params['batch']) * Number(r.params['seq']);
  return { calls: times.length, stepMs, minStepMs: times.length > 0 ? Math.min(...times) : NaN, tokPerSec: (tokensPerCall * 1000) / stepMs };
}

function metricsOf(r: CaseResult, traces: readonly WorkloadTrace[]): Metrics {
  const m: Metrics = { runs: traces.length };
  const requests = traces.flatMap((t) => t.requests);
  const ttft = requests.map((q) => (q.firstSeenMs ?? NaN) - q.submittedMs).filter(Number.isFinite);
  const engineTtft = requests.map((q) => q.engineTtftMs ?? NaN).filter(Number.isFinite);
  if (ttft.length > 0) m['ttftMs'] = medianOf(ttft);
  if (engineTtft.length > 0) m['engineTtftMs'] = medianOf(engineTtft);
  m['cachedTokens'] = medianOf(requests.map((q) => q.numCachedTokens));
  m['outputTokens'] = traces.reduce((sum, t) => sum + outputTokens(t), 0);
  if (r.group === GROUP.throughput) {
    const batch = r.variant === VARIANT.serial ? 1 : Number(r.params['concurrency']);
    const steps = traces.flatMap((t) => decodeStepMs(t, batch));
    m['decodeBatch'] = batch;
    m['decodeSteps'] = steps.length;
    if (steps.length > 0) {
      m['decodeStepMs'] = medianOf(steps);
      m['minDecodeStepMs'] = Math.min(...steps);
    }
  }
  return m;
}

interface Lookup {
  find(group: string, variant: string, point: string): CaseResult | undefined;
  metric(result: CaseResult | undefined, name: string): number;
  /** Output tokens/s of a throughput case (the harness's: work at the median run). */
  rate(variant: string, concurrency: number): number;
  floorStepMs(point: string): number;
  floorRate(point: string): number;
}

function lookup(results: readonly CaseResult[], metrics: ReadonlyMap<string, Metrics>): Lookup {
  const find = (group: string, variant: string, point: string) => results.find((r) => r.group === group && r.variant === variant && r.point === point);
  const metric = (result: CaseResult | undefined, name: string) => (result ? num(metrics.get(result.id)?.[name]) : NaN);
  return {
    find,
    metric,
    rate: (variant, c) => find(GROUP.throughput, variant, `c${c}`)?.throughput?.perSecond ?? NaN,
    floorStepMs: (point) => metric(find(GROUP.forward, VARIANT.floor, point), 'stepMs'),
    floorRate: (point) => metric(find(GROUP.forward, VARIANT.floor, point), 'tokPerSec'),
  };
}

function throughputTable(config: EngineBenchConfig, look: Lookup): string {
  const headers = [
    'Concurrency',
    'Batched tok/s',
    'max_num_seqs=1 tok/s',
    'Batched / max_num_seqs=1',
    'Decode floor tok/s',
    'Batched / decode floor',
    'Forward-only tok/s',
    'Batched / forward-only',
    'Engine step ms',
    'Forward call ms',
    'Step overhead',
    'Step overhead (min / min)',
  ];
  const rows = config.concurrency.map((c) => {
    const batched = look.rate(VARIANT.batched, c);
    const serial = look.rate(VARIANT.serial, c);
    const floor = look.floorRate(`decode b${c}`);
    const engineCase = look.find(GROUP.throughput, VARIANT.batched, `c${c}`);
    const step = look.metric(engineCase, 'decodeStepMs');
    const forward = look.floorStepMs(`decode b${c}`);
    // The fastest step against the fastest call: the pair least disturbed by other work on the machine.
    const minRatio = look.metric(engineCase, 'minDecodeStepMs') / look.metric(look.find(GROUP.forward, VARIANT.floor, `decode b${c}`), 'minStepMs');
    const forwardOnly = forwardOnlyRate(config, c, look);
    return [
      String(c),
      fmtRate(batched),
      fmtRate(serial),
      times(batched / serial),
      fmtRate(floor),
      percent(batched / floor),
      fmtRate(forwardOnly),
      percent(batched / forwardOnly),
      fmt(step),
      fmt(forward),
      times(step / forward),
      times(minRatio),
    ];
  });
  return markdownTable(
    headers,
    rows,
    headers.map((_, i) => (i === 0 ? 'left' : 'right')),
  );
}

/**
 * Output tokens/s of a point if the engine cost nothing but its forward passes: its prefill calls
 * plus output − 1 decode steps at batch `c`, each at the floor's median call.
 */
function forwardOnlyRate(config: EngineBenchConfig, c: number, look: Lookup): number {
  const rows = prefillRowsFor(config, c);
  const prefill = look.floorStepMs(`prefill ${rows}×${config.promptTokens}`);
  const ms = Math.ceil(c / rows) * prefill + (config.outputTokens - 1) * look.floorStepMs(`decode b${c}`);
  return (c * config.outputTokens) / (ms / 1000);
}

function ttftTable(results: readonly CaseResult[], metrics: ReadonlyMap<string, Metrics>): string {
  const rows = results
    .filter((r) => r.group === GROUP.ttft)
    .map((r) => {
      const m = metrics.get(r.id) ?? {};
      return [r.variant, r.point, String(Number(r.params['prefixTokens']) + Number(r.params['suffixTokens'])), fmt(num(m['ttftMs'])), fmt(num(m['engineTtftMs'])), String(m['cachedTokens'] ?? '')];
    });
  return markdownTable(['Variant', 'Case', 'Prompt tokens', 'TTFT ms (client, median)', 'TTFT ms (engine stamps)', 'Cached tokens'], rows, ['left', 'left', 'right', 'right', 'right', 'right']);
}

function kvTable(kv: ReadonlyMap<string, KvWaste>): string {
  const rows = [...kv].map(([id, w]) => [
    id,
    `${w.samples} (${w.skipped} skipped)`,
    `${w.agreeing}/${w.samples}`,
    String(w.peakBlocksInUse),
    percent(w.pagedWaste, 2),
    percent(w.promptPlusMaxWaste, 1),
    percent(w.maxModelLenWaste, 1),
  ]);
  const headers = ['Case', 'Step samples', 'Blocks = Σ⌈stored/16⌉', 'Peak blocks', 'Paged waste', 'Contiguous prompt+max_tokens', 'Contiguous max_model_len'];
  return markdownTable(
    headers,
    rows,
    headers.map((_, i) => (i === 0 ? 'left' : 'right')),
  );
}

function profileTable(profile: readonly StepProfile[]): string {
  const rows = profile.map((p) => [
    String(p.batch),
    String(p.past),
    String(p.steps),
    fmt(p.stepMs),
    fmt(p.ortMs),
    fmt(p.copyMs),
    fmt(p.otherMs),
    fmt(p.samplerMs),
    String(p.ortCalls),
    `${p.reusedPast}/${p.steps}`,
    percent(1 - p.ortMs / p.stepMs),
  ]);
  const headers = ['Batch', 'Past', 'Steps', 'Step ms', 'ORT ms', 'KV copy ms', 'Other ms', 'Sampler alone ms', 'ORT calls', 'Past reused', 'Outside ORT'];
  return markdownTable(
    headers,
    rows,
    headers.map(() => 'right'),
  );
}

interface Target {
  readonly name: string;
  readonly aim: string;
  readonly measured: string;
  readonly met: string;
}

function targetRows(config: EngineBenchConfig, look: Lookup, top: number, waste: KvWaste | undefined): Target[] {
  const batched = look.rate(VARIANT.batched, top);
  const floor = look.floorRate(`decode b${top}`);
  const serial = look.rate(VARIANT.serial, top);
  const ttftOf = (variant: string) => look.metric(look.find(GROUP.ttft, variant, `prefix ${config.prefixTokens}`), 'ttftMs');
  const ttftGain = ttftOf(VARIANT.cacheOff) / ttftOf(VARIANT.cacheOn);
  const verdict = (ok: boolean, value: number) => (Number.isNaN(value) ? 'no data' : ok ? 'met' : 'missed');
  return [
    {
      name: `aggregate tok/s at c${top} / forward floor at b${top}`,
      aim: `≥ ${percent(TARGETS.floorShare)}`,
      measured: percent(batched / floor),
      met: verdict(batched / floor >= TARGETS.floorShare, batched / floor),
    },
    { name: `batched / max_num_seqs=1 at c${top}`, aim: `≥ ${TARGETS.batchingGain}×`, measured: times(batched / serial), met: verdict(batched / serial >= TARGETS.batchingGain, batched / serial) },
    { name: `TTFT prefix cache off / on (${config.prefixTokens}-token prefix)`, aim: `≥ ${TARGETS.ttftGain}×`, measured: times(ttftGain), met: verdict(ttftGain >= TARGETS.ttftGain, ttftGain) },
    {
      name: 'KV waste of the paged cache (mixed workload)',
      aim: `< ${percent(TARGETS.kvWaste)}`,
      measured: percent(waste?.pagedWaste ?? NaN, 2),
      met: verdict((waste?.pagedWaste ?? NaN) < TARGETS.kvWaste, waste?.pagedWaste ?? NaN),
    },
  ];
}

export function engineCharts(config: EngineBenchConfig, label: string): ChartRequest[] {
  return [
    {
      kind: 'line',
      file: 'engine-throughput.svg',
      title: `${label}: output tokens/s vs concurrent requests (prompt ${config.promptTokens}, output ${config.outputTokens})`,
      xLabel: 'concurrent requests (floor: batch)',
      yLabel: 'tokens/s',
      logX: true,
      select: (r) => r.group === GROUP.throughput || (r.group === GROUP.forward && r.params['phase'] === 'decode'),
      seriesOf: (r) => r.variant,
      x: (r) => Number(r.params['concurrency'] ?? r.params['batch']),
      // The floor's rate from its median call (as in the tables); the engine's from its median run.
      y: (r) => (r.group === GROUP.forward ? num(r.metrics?.['tokPerSec']) : (r.throughput?.perSecond ?? NaN)),
    },
    {
      kind: 'bar',
      file: 'engine-ttft.svg',
      title: `${label}: time to first token, ${config.prefixTokens}-token shared prefix (median ms)`,
      yLabel: 'ms',
      select: (r) => r.group === GROUP.ttft,
      seriesOf: (r) => r.variant,
      value: (r) => num(r.metrics?.['ttftMs']) || r.stats.median / config.ttftRequests,
    },
  ];
}

const num = (value: unknown): number => (typeof value === 'number' ? value : NaN);
const fmt = (ms: number): string => (Number.isFinite(ms) ? formatMs(ms) : '–');
const fmtRate = (x: number): string => (Number.isFinite(x) ? formatRate(x) : '–');
const times = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '–');
const percent = (x: number, digits = 0): string => (Number.isFinite(x) ? `${(x * 100).toFixed(digits)}%` : '–');
