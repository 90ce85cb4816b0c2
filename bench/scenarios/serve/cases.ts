// One harness case per (concurrency point, system): a run sends the point's prompts to the
// system under the load shape and keeps every request's trace. All systems get the same prompts
// at a point, but each point and repetition has prompts of its own, so a server with prefix
// caching never finds a previous run's prompt in its cache (the baselines have no cache).

import { loadavg } from 'node:os';
import type { BenchCase } from '../../harness/types.js';
import { runLoad, type LoadShape } from './arrivals.js';
import { sendCompletion, type PromptRequest, type RequestOutput } from './client.js';
import { promptsAt, type ServeConfig } from './config.js';
import { buildDataset, type PromptTokenizer } from './dataset.js';
import { calculateMetrics, type ServeMetrics } from './metrics.js';
import type { System } from './systems.js';

/** A point's measured runs so far, by case id. */
export interface Recorded {
  readonly system: string;
  readonly concurrency: number;
  readonly outputs: RequestOutput[];
  durationMs: number;
  /** 1-minute load average when each measured run started: other work on the machine. */
  readonly loadAverages: number[];
}

export type RecordedRuns = Map<string, Recorded>;

/** A line on stderr this often while a long run is going. */
const TICK_MS = 30_000;

export function pointLabel(concurrency: number): string {
  return concurrency === Infinity ? 'c∞' : `c${concurrency}`;
}

export function groupLabel(config: ServeConfig): string {
  const range = config.rangeRatio > 0 ? ` ±${Math.round(config.rangeRatio * 100)}%` : '';
  const prefix = config.prefixLen > 0 ? ` prefix ${config.prefixLen}${config.numPrefixes > 1 ? `×${config.numPrefixes}` : ''}` : '';
  const rateText = config.requestRate === Infinity ? '' : ` @${config.requestRate}/s`;
  return `${config.dataset} in ${config.inputLen} out ${config.outputLen}${range}${prefix}${rateText}`;
}

/** Prompts by point and repetition, built once and shared by every system. */
export class Datasets {
  private readonly built = new Map<string, PromptRequest[]>();

  constructor(
    private readonly config: ServeConfig,
    private readonly tokenizer: PromptTokenizer | null,
  ) {}

  get(pointIndex: number, concurrency: number, rep: number, warmup: boolean): PromptRequest[] {
    const key = `${pointIndex}/${rep}/${warmup}`;
    let prompts = this.built.get(key);
    if (!prompts) {
      const c = this.config;
      // Distinct seeds per point, repetition and phase: distinct prompts, no cache hits between runs.
      const seed = c.seed * 1_000_003 + pointIndex * 1009 + rep * 2 + (warmup ? 1 : 0) + 1;
      const spec = {
        kind: c.dataset,
        numPrompts: promptsAt(c, concurrency, pointIndex),
        inputLen: c.inputLen,
        outputLen: c.outputLen,
        rangeRatio: c.rangeRatio,
        prefixLen: c.prefixLen,
        numPrefixes: c.numPrefixes,
        seed,
      };
      prompts = buildDataset(spec, this.tokenizer);
      this.built.set(key, prompts);
    }
    return prompts;
  }
}

export interface CaseContext {
  readonly config: ServeConfig;
  readonly datasets: Datasets;
  readonly recorded: RecordedRuns;
  readonly countTokens: ((text: string) => number) | undefined;
  readonly log: (line: string) => void;
}

export function serveCase(system: System, concurrency: number, pointIndex: number, context: CaseContext): BenchCase {
  const { config } = context;
  const group = groupLabel(config);
  const point = pointLabel(concurrency);
  const id = `${group} ${system.name} ${point}`;
  const shape: LoadShape = { requestRate: config.requestRate, burstiness: config.burstiness, maxConcurrency: concurrency, seed: config.seed + pointIndex };
  return {
    group,
    variant: system.name,
    point,
    params: { concurrency: concurrency === Infinity ? 'inf' : concurrency, prompts: promptsAt(config, concurrency, pointIndex), model: system.target.model },
    run: async (slot) => {
      const warmup = slot?.warmup ?? false;
      const prompts = context.datasets.get(pointIndex, concurrency, slot?.rep ?? 0, warmup);
      const load = loadavg()[0]!;
      let finished = 0;
      const ticker = setInterval(() => context.log(`${id}${warmup ? ' (warm-up)' : ''}: ${finished}/${prompts.length} requests done`), TICK_MS);
      let result;
      try {
        result = await runLoad(prompts.length, shape, async (i) => {
          const output = await sendCompletion(system.target, prompts[i]!);
          finished += 1;
          return output;
        });
      } finally {
        clearInterval(ticker);
      }
      if (warmup) return;
      if (!result.outputs.some((o) => o.success)) throw new Error(`every request failed: ${result.outputs[0]?.error ?? 'no requests'}`);
      const entry = context.recorded.get(id) ?? { system: system.name, concurrency, outputs: [], durationMs: 0, loadAverages: [] };
      entry.outputs.push(...result.outputs);
      entry.loadAverages.push(load);
      entry.durationMs += result.durationMs;
      context.recorded.set(id, entry);
      context.log(runLine(id, metricsOf(entry, context)));
    },
  };
}

export function metricsOf(entry: Recorded, context: Pick<CaseContext, 'config' | 'countTokens'>): ServeMetrics {
  const options = { ...(context.config.slo ? { slo: context.config.slo } : {}), ...(context.countTokens ? { countTokens: context.countTokens } : {}) };
  return calculateMetrics(entry.outputs, entry.durationMs, options);
}

/** One line for the progress log after a measured run. */
export function runLine(id: string, m: ServeMetrics): string {
  const failed = m.failed > 0 ? `, ${m.failed} failed (${m.firstError})` : '';
  return (
    `${id}: ${m.outputThroughput.toFixed(1)} output tok/s, ${m.requestThroughput.toFixed(2)} req/s, ` +
    `TTFT median ${m.ttftMs.median.toFixed(0)} / p99 ${m.ttftMs.p99.toFixed(0)} ms, TPOT median ${m.tpotMs.median.toFixed(1)} ms, peak in flight ${m.maxConcurrentRequests}${failed}`
  );
}
