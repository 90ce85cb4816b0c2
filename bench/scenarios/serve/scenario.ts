// `npm run bench -- serve`: vLLM's serving benchmark in TypeScript, over OpenAI streaming
// completions. Without --base-url it starts Conveyor (batching on, and off with max_num_seqs 1)
// and the naive server on the same decoder, and every concurrency point runs all three side by
// side, interleaved by the harness; with --base-url it measures that server alone.

import { availableParallelism, loadavg } from 'node:os';
import { basename } from 'node:path';
import { ensureBuilt, type BuiltModel } from '../../../models/catalog.js';
import type { ModelSize } from '../../../models/common/model-files.js';
import type { PreparedScenario, Scenario, ScenarioContext } from '../../harness/scenario.js';
import type { BenchCase, SkippedCase } from '../../harness/types.js';
import { sendCompletion } from './client.js';
import { serveConfig, SERVE_FLAGS, type ServeConfig } from './config.js';
import { Datasets, groupLabel, metricsOf, serveCase, type RecordedRuns } from './cases.js';
import { buildDataset, countTokens as countPromptTokens, loadPromptTokenizer, type PromptTokenizer } from './dataset.js';
import { conclude, serveCharts, TARGET, type MeasuredPoint } from './report.js';
import { startSystems, type StartedSystems, type System } from './systems.js';

export type DecoderSource = (size: ModelSize) => Promise<Pick<BuiltModel, 'dir'>>;

export function serveScenario(source: DecoderSource = (size) => ensureBuilt('qwen3', size)): Scenario {
  return {
    name: 'serve',
    description: 'vLLM-style serving benchmark over OpenAI streaming completions: Conveyor, Conveyor with batching off, and a naive server, or any --base-url',
    flags: SERVE_FLAGS,
    // A run is a whole load test; the systems are warmed with a few requests in prepare() instead.
    defaults: { full: { reps: 1, warmup: 0 }, quick: { reps: 1, warmup: 0 }, baseline: TARGET.baseline },
    prepare: (context) => prepareServe(source, context),
  };
}

async function prepareServe(source: DecoderSource, context: ScenarioContext): Promise<PreparedScenario> {
  const config = serveConfig(context.flags, context.quick);
  const loadAtStart = loadavg()[0]!;
  const modelDir = config.modelDir ?? (config.baseUrl && config.tokenizer ? undefined : await buildDecoder(source, config, context.log));
  const tokenizerDir = config.tokenizer === 'none' ? undefined : (config.tokenizer ?? modelDir);
  const tokenizerLoad = tokenizerDir ? loadPromptTokenizer(tokenizerDir) : Promise.resolve(null);
  let started: StartedSystems | undefined;
  const dispose = async (): Promise<void> => void (await started?.stop());
  try {
    const skipped: SkippedCase[] = [];
    let systems: System[];
    if (config.baseUrl) {
      systems = [{ name: 'external', target: await externalTarget(config), description: `external: the server at ${config.baseUrl}` }];
    } else {
      const modelName = config.model ?? basename(modelDir!);
      const maxNumSeqs = Math.max(32, ...config.concurrency.filter(Number.isFinite));
      context.log(`starting ${config.systems.join(', ')} on ${modelDir}…`);
      started = await startSystems({ modelDir: modelDir!, modelName, which: config.systems, maxNumSeqs }, context.log);
      systems = started.systems;
      for (const f of started.failures) skipped.push({ group: groupLabel(config), variant: f.name, reason: `did not start: ${f.reason}` });
    }
    const tokenizer = await tokenizerLoad;
    const ready = await warmUp(systems, config, tokenizer, skipped, context.log);
    const recorded: RecordedRuns = new Map();
    const countTokens = tokenizer ? (text: string) => countPromptTokens(tokenizer, text) : undefined;
    const caseContext = { config, datasets: new Datasets(config, tokenizer), recorded, countTokens, log: context.log };
    // Every system at a point next to each other, so the systems of a point run closest in time.
    const cases: BenchCase[] = config.concurrency.flatMap((c, index) => ready.map((system) => serveCase(system, c, index, caseContext)));
    return {
      cases,
      skipped,
      charts: serveCharts(config.baseUrl ? systems[0]!.target.model : basename(modelDir!)),
      notes: setupNotes(config, ready, tokenizerDir),
      settings: settingsOf(config),
      conclude: (results) => {
        const measured = new Map<string, MeasuredPoint>();
        for (const [id, entry] of recorded) measured.set(id, { system: entry.system, concurrency: entry.concurrency, metrics: metricsOf(entry, caseContext), loadAverages: entry.loadAverages });
        const conclusion = conclude(results, measured, { systems: ready.map((s) => s.name), concurrency: config.concurrency, withGoodput: config.slo !== undefined });
        const load = `1-minute load average ${loadAtStart.toFixed(2)} before the run, ${loadavg()[0]!.toFixed(2)} after, on ${availableParallelism()} cores (servers, load generator and anything else running share them).`;
        return { ...conclusion, notes: [load] };
      },
      dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

async function buildDecoder(source: DecoderSource, config: ServeConfig, log: (line: string) => void): Promise<string> {
  log(`building qwen3 ${config.size}…`);
  return (await source(config.size)).dir;
}

async function externalTarget(config: ServeConfig) {
  const baseUrl = config.baseUrl!;
  const auth = config.apiKey ? { apiKey: config.apiKey } : {};
  if (config.model) return { baseUrl, model: config.model, ...auth };
  const response = await fetch(`${baseUrl}/v1/models`, { headers: config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {} });
  if (!response.ok) throw new Error(`GET ${baseUrl}/v1/models: HTTP ${response.status}; pass --model NAME`);
  const first = ((await response.json()) as { data?: { id?: string }[] }).data?.[0]?.id;
  if (!first) throw new Error(`${baseUrl}/v1/models lists no model; pass --model NAME`);
  return { baseUrl, model: first, ...auth };
}

/**
 * Two short requests per system, one after the other: proves the route works before anything is
 * timed (a system that fails here is skipped, with the reason) and gets first-call costs out of
 * the way.
 */
async function warmUp(systems: readonly System[], config: ServeConfig, tokenizer: PromptTokenizer | null, skipped: SkippedCase[], log: (line: string) => void): Promise<System[]> {
  const prompts = buildDataset(
    { kind: 'random', numPrompts: 2, inputLen: Math.min(config.inputLen, 16), outputLen: Math.min(config.outputLen, 4), rangeRatio: 0, prefixLen: 0, numPrefixes: 1, seed: 999_983 },
    tokenizer,
  );
  const ready: System[] = [];
  for (const system of systems) {
    log(`warming up ${system.name}…`);
    let failure: string | undefined;
    for (const prompt of prompts) {
      const output = await sendCompletion(system.target, prompt);
      if (!output.success) failure ??= output.error;
      else if (output.outputTokens !== null && output.outputTokens !== prompt.outputLen) failure ??= `asked for ${prompt.outputLen} tokens with ignore_eos, usage says ${output.outputTokens}`;
    }
    if (failure === undefined) ready.push(system);
    else skipped.push({ group: groupLabel(config), variant: system.name, reason: `warm-up request failed: ${failure}` });
  }
  return ready;
}

function settingsOf(config: ServeConfig): Record<string, unknown> {
  const { apiKey: _apiKey, requestRate, concurrency, slo, numPrompts, ...rest } = config;
  const settings: Record<string, unknown> = {
    ...rest,
    numPrompts: numPrompts ?? `2 × concurrency, at least ${config.quick ? 2 : 8}`,
    requestRate: requestRate === Infinity ? 'inf' : requestRate,
    concurrency: concurrency.map((c) => (c === Infinity ? 'inf' : c)),
    ...(slo ? { goodput: JSON.stringify(slo) } : {}),
    cores: availableParallelism(),
  };
  // Flags left to their defaults say nothing; the notes name the model and systems.
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined));
}

function setupNotes(config: ServeConfig, systems: readonly System[], tokenizerDir: string | undefined): string[] {
  const rate = config.requestRate === Infinity ? 'all requests due at t = 0' : `gamma arrivals at ${config.requestRate} req/s, burstiness ${config.burstiness}`;
  const prompts = tokenizerDir
    ? `random ordinary token ids of the tokenizer in \`${tokenizerDir}\`, decoded and re-tokenized until each prompt is exactly its drawn length`
    : 'random pseudo-words (no tokenizer: lengths approximate)';
  return [
    ...systems.map((s) => s.description),
    `Client: POST /v1/completions with stream, stream_options.include_usage, ignore_eos, temperature 0 and max_tokens = output length; plain fetch and an SSE parser in the bench process, timed with performance.now() (vLLM's rules: the first event with non-empty choices is the first token; E2E ends at the last such event). Load: ${rate}, at most the point's concurrency in flight.`,
    `Prompts: ${prompts}; each point and repetition has its own prompts (same for every system), so no run hits a previous run's prefix cache.`,
    'In results.json, `samplesMs` and the harness statistics are the wall time of a whole run (all prompts of the point); the serving metrics are under `metrics`.',
  ];
}
