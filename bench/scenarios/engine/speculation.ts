// `npm run bench -- engine --speculation`: n-gram (or with --draft, draft-model) speculative
// decoding off vs on, side by side in one interleaved run, at each --concurrency, on copy-heavy
// workloads and random prompts, with acceptance (mean accepted tokens per verify step) beside
// tokens/s.
//
// A copy-heavy prompt holds the model's own greedy continuation of its first part: TEXT (the
// model's greedy text) + COPY (its greedy continuation of TEXT, with small edits for 'edit') +
// MORE (other text) + the last tokens of TEXT again, so a model that copies from its context
// continues with COPY. The copier (--copier, copier.ts) does by construction, a trained model
// (--model-dir, a `conveyor convert` output) where it learned to; a random-weight decoder does
// not (its greedy output is chaotic in its context: measured, even iterating prompt → output →
// prompt to a fixed point gave 0% copied on the tiny decoder), so on the bench decoder the copy
// workloads measure the near-zero-acceptance case. The share of each
// final continuation equal to the copy is reported per workload.

import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { pagedSegmentsDir } from '../../../src/contracts/paged-segments.js';
import { pagedVariantFile } from '../../../src/repository/variants.js';
import { SeededRandom, seedFor } from '../../../kernels/onnx/random.js';
import type { EngineWorkerData } from '../../../src/contracts/engine-messages.js';
import type { GenerateRequest, StepSpecDecode } from '../../../src/contracts/generate.js';
import { EngineClient } from '../../../src/engine-client/engine-client.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import type { ChartRequest } from '../../harness/charts.js';
import type { PreparedScenario, ScenarioContext } from '../../harness/scenario.js';
import { type BenchCase, type CaseResult, caseId } from '../../harness/types.js';
import { type EngineBenchConfig, engineData } from './config.js';
import { benchRequest } from './workload.js';

export const SPEC_VARIANT = { off: 'spec off', on: 'spec on', unlimited: 'spec on, no batch limit' } as const;
type SpecKey = keyof typeof SPEC_VARIANT;

/** Below Qwen3's special tokens, so random filler is ordinary text to the bench decoder. */
const ORDINARY_TOKENS = 151_643;
/** Tokens before the copy, repeated at the prompt's end, so its continuation starts where the copy does. */
const ANCHOR_TOKENS = 8;
/** Distinct prompts per workload; stream i sends prompt i mod this. */
const PROMPTS_PER_WORKLOAD = 4;
/** Acceptance (accepted tokens per verify step) below which it counts as near zero. */
const MEASURABLE_ACCEPTANCE = 0.1;
/** Steps of each kind timed for the step-cost ratio (interleaved, after as many unmeasured)… */
const STEP_COST_SAMPLES = 200;
/** …or fewer, at least 10, where a past length's pairs take longer than this (a weights-bound decoder on a loaded machine), ms. */
const STEP_COST_BUDGET_MS = 20_000;
/** Past lengths the step-cost ratio is measured at: a short prompt and the edit workload's ~1,000 tokens. */
const STEP_COST_PASTS = [128, 1000] as const;

interface Workload {
  readonly name: string;
  readonly description: string;
  /** Filler before the copy and after it, tokens. */
  readonly before: number;
  readonly after: number;
  readonly outputTokens: number;
  /** Every nth token of the copy is replaced (small edits: the prompt holds the original, the output is the edit); 0: verbatim. */
  readonly editEvery: number;
  /** False: random prompts, no copy. */
  readonly copies: boolean;
}

function workloads(config: EngineBenchConfig, quick: boolean): Workload[] {
  const s = quick ? 8 : 1;
  return [
    {
      name: 'edit',
      description: 'rewrite a ~1,000-token document with small edits (1 token in 24 differs)',
      before: Math.round(872 / s),
      after: 0,
      outputTokens: Math.round(128 / s),
      editEvery: 24,
      copies: true,
    },
    {
      name: 'quote',
      description: 'answer quoting a 128-token span of a 640-token context',
      before: Math.round(384 / s),
      after: Math.round(128 / s),
      outputTokens: Math.round(128 / s),
      editEvery: 0,
      copies: true,
    },
    {
      name: 'tool',
      description: 'tool-call arguments (64 tokens) copied from a 256-token tool result',
      before: Math.round(96 / s),
      after: Math.round(96 / s),
      outputTokens: Math.round(64 / s),
      editEvery: 0,
      copies: true,
    },
    { name: 'random', description: `random ${config.promptTokens}-token prompts, no copy`, before: config.promptTokens, after: 0, outputTokens: config.outputTokens, editEvery: 0, copies: false },
  ];
}

/** The paged files beside an Optimum model (`onnx/model.onnx` or a precision variant): the native kernel's segments where built, else the paged graph. */
export function pagedModelOf(optimumModel: string): string {
  const graph = join(dirname(optimumModel), pagedVariantFile(basename(optimumModel)));
  const segments = pagedSegmentsDir(graph);
  if (existsSync(segments)) return segments;
  if (existsSync(graph)) return graph;
  throw new Error(`no ${segments} or ${graph}: speculation needs a paged runner`);
}

/** What the measured runs of a case saw: each run's spec_decode totals. */
/** One measured run: its spec_decode totals, and its output tokens over the steps that gave its sequences a token (a sequence-step each). */
interface RunObservation {
  readonly spec: StepSpecDecode;
  readonly tokens: number;
  readonly sequenceSteps: number;
}
type SpecObservations = Map<string, RunObservation[]>;

interface BuiltPrompts {
  readonly prompts: number[][];
  /** Share of the final greedy continuation's positions equal to the copy the prompt holds (0 for random). */
  readonly copyShare: number;
}

export async function prepareSpeculation(config: EngineBenchConfig, modelPath: string, label: string, context: ScenarioContext): Promise<PreparedScenario> {
  const maxConcurrency = Math.max(...config.concurrency);
  // With --draft, a draft model proposes (its fp32 paged files) instead of n-gram lookup.
  const draftModelPath = config.draftDir ? pagedModelOf(join(config.draftDir, 'onnx', 'model.onnx')) : null;
  const spec = (disableByBatchSize?: number): Partial<EngineWorkerData> => {
    const limits = {
      numSpeculativeTokens: config.speculativeTokens,
      disableByBatchSize: disableByBatchSize ?? config.disableByBatchSize ?? Math.max(1, Math.floor(32 / (config.speculativeTokens + 1))),
    };
    return { speculative: draftModelPath ? { method: 'draft_model', draftModelPath, ...limits } : { method: 'ngram', promptLookupMin: 2, promptLookupMax: 5, ...limits } };
  };
  const data: Record<SpecKey, EngineWorkerData> = {
    off: engineData(config, modelPath, {}),
    on: engineData(config, modelPath, spec()),
    unlimited: engineData(config, modelPath, spec(maxConcurrency)),
  };
  context.log('timing a verify step against a decode step on the runner alone…');
  const stepCosts = await measureStepCosts(config, modelPath, context.quick);
  context.log(`starting 3 engines on ${modelPath}…`);
  const started: EngineClient[] = [];
  const dispose = async () => {
    await Promise.all(started.map((e) => e.close().catch(() => {})));
  };
  try {
    const engines = {} as Record<SpecKey, EngineClient>;
    for (const key of Object.keys(data) as SpecKey[]) {
      engines[key] = await EngineClient.start(data[key], (line) => context.log(`[${key}] ${line}`));
      started.push(engines[key]);
    }
    const vocab = Math.min(engines.off.info.vocabSize, ORDINARY_TOKENS);
    const built = new Map<string, BuiltPrompts>();
    for (const w of workloads(config, context.quick)) {
      context.log(`building the ${w.name} prompts (${w.copies ? 'greedy text' : 'random'})…`);
      built.set(w.name, await buildPrompts(engines.off, w, vocab, Math.min(PROMPTS_PER_WORKLOAD, maxConcurrency)));
    }
    const observed: SpecObservations = new Map();
    const cases: BenchCase[] = [];
    for (const w of workloads(config, context.quick)) {
      for (const concurrency of config.concurrency) {
        for (const key of Object.keys(data) as SpecKey[]) cases.push(specCase(w, concurrency, key, engines[key], built.get(w.name)!.prompts, observed));
      }
    }
    context.log('warming the engines (every prompt once, so the timed runs decode from a warm prefix cache)…');
    for (const c of cases.filter((c) => c.params['concurrency'] === maxConcurrency)) await c.run({ warmup: true, rep: 0 });
    const list = workloads(config, context.quick);
    return {
      cases,
      skipped: [],
      charts: [speedupChart(label, draftModelPath ? 'draft-model' : 'n-gram')],
      notes: [
        `model: ${label}; engines: the paged runner (${modelPath.endsWith('.segments') ? 'native kernel' : 'paged graph'}), max_num_seqs ${maxConcurrency}, max_num_batched_tokens ${config.maxNumBatchedTokens}, ${config.threads} intra-op threads, prefix caching on, each in its own worker`,
        `speculation: ${draftModelPath ? `draft model ${draftModelPath}` : 'ngram'}, num_speculative_tokens ${config.speculativeTokens}${draftModelPath ? '' : ', prompt_lookup 2–5'}; '${SPEC_VARIANT.on}' with disable_by_batch_size ${data.on.speculative!.disableByBatchSize}, '${SPEC_VARIANT.unlimited}' with ${maxConcurrency} (proposes at every concurrency)`,
        `workloads (greedy, ignore_eos; stream i sends prompt i mod ${Math.min(PROMPTS_PER_WORKLOAD, maxConcurrency)}; tok/s = output tokens / wall time of the point, prompts already in the prefix cache after warm-up): ${list.map((w) => `${w.name}: ${w.description}, ${w.outputTokens} output tokens`).join('; ')}`,
        `copy share (positions of the prompt's greedy continuation equal to the copy it holds, unedited): ${list
          .filter((w) => w.copies)
          .map((w) => `${w.name} ${(built.get(w.name)!.copyShare * 100).toFixed(0)}%`)
          .join(', ')}`,
        `acceptance = accepted tokens / verify steps (vLLM's mean acceptance length − 1) over the measured runs; target at 1 stream: speedup ≥ 0.8 × (1 + acceptance) where acceptance ≥ ${MEASURABLE_ACCEPTANCE}, and ≥ 0.97 everywhere (no regression)`,
        "tokens a step = a sequence's output tokens per step it was in ('spec on'); ÷ tokens a step = speedup ÷ (that, on against off): 1.00 where a verify step costs what a decode step does. It differs from 1 + acceptance where steps found nothing to propose (no n-gram match, or paused)",
      ],
      settings: { ...config, modelPath, label, workloads: list, disableByBatchSize: data.on.speculative!.disableByBatchSize },
      conclude: (results) => concludeSpeculation(results, observed, config, stepCosts),
      dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

function specCase(w: Workload, concurrency: number, key: SpecKey, engine: EngineClient, prompts: readonly number[][], observed: SpecObservations): BenchCase {
  const info = {
    group: w.name,
    variant: SPEC_VARIANT[key],
    point: `c${concurrency}`,
    params: { concurrency, outputTokens: w.outputTokens, promptTokens: prompts[0]!.length },
    work: { count: concurrency * w.outputTokens, unit: 'tok' },
  };
  let run = 0;
  return {
    ...info,
    run: async (slot) => {
      run++;
      const requests = Array.from({ length: concurrency }, (_, i) => benchRequest(`${key}-${w.name}-c${concurrency}-${run}-${i}`, prompts[i % prompts.length]!, w.outputTokens));
      const totals = await generate(engine, requests);
      if (slot?.warmup) return;
      const id = caseId(info);
      observed.set(id, [...(observed.get(id) ?? []), { spec: totals.spec, tokens: totals.numTokens, sequenceSteps: totals.sequenceSteps }]);
    },
  };
}

/** Submits every request at once; their output tokens, the spec_decode totals of the steps that served them, and how many tokens each step gave each sequence. */
async function generate(engine: EngineClient, requests: readonly GenerateRequest[]): Promise<{ tokens: Map<string, number[]>; spec: StepSpecDecode; numTokens: number; sequenceSteps: number }> {
  const ids = new Set(requests.map((r) => r.id));
  let spec: StepSpecDecode = { numDrafts: 0, numDraftTokens: 0, numAcceptedTokens: 0, acceptedPerPosition: [] };
  let numTokens = 0;
  let sequenceSteps = 0;
  const stop = engine.onStep((output) => {
    if (output.specDecode && output.updates.some((u) => ids.has(u.requestId))) spec = addSpec(spec, output.specDecode);
    for (const u of output.updates)
      if (ids.has(u.requestId) && u.newTokenIds.length > 0) {
        numTokens += u.newTokenIds.length;
        sequenceSteps++;
      }
  });
  const tokens = new Map<string, number[]>();
  try {
    await Promise.all(
      requests.map(async (request) => {
        const out: number[] = [];
        tokens.set(request.id, out);
        for await (const { update } of engine.submit(request)) out.push(...update.newTokenIds);
      }),
    );
  } finally {
    stop();
  }
  return { tokens, spec, numTokens, sequenceSteps };
}

function addSpec(a: StepSpecDecode, b: StepSpecDecode): StepSpecDecode {
  const positions = Array.from({ length: Math.max(a.acceptedPerPosition.length, b.acceptedPerPosition.length) }, (_, i) => (a.acceptedPerPosition[i] ?? 0) + (b.acceptedPerPosition[i] ?? 0));
  return { numDrafts: a.numDrafts + b.numDrafts, numDraftTokens: a.numDraftTokens + b.numDraftTokens, numAcceptedTokens: a.numAcceptedTokens + b.numAcceptedTokens, acceptedPerPosition: positions };
}

/**
 * A workload's prompts: random ones, or copy-heavy ones (see the header): text the model wrote
 * itself (greedy from two random tokens), then its greedy continuation — the copy, edited where
 * the workload edits — then more of its text, then the last tokens before the copy again, so a
 * model that copies from context continues with the copy.
 */
async function buildPrompts(engine: EngineClient, w: Workload, vocab: number, count: number): Promise<BuiltPrompts> {
  const random = new SeededRandom(seedFor(20_261_206, w.name));
  const ints = (n: number) => random.ints(n, vocab);
  if (!w.copies) return { prompts: Array.from({ length: count }, () => ints(w.before)), copyShare: 0 };
  let round = 0;
  const greedy = async (prompts: readonly number[][], maxTokens: number) => {
    const requests = prompts.map((prompt, i) => benchRequest(`build-${w.name}-${round}-${i}`, prompt, maxTokens));
    round++;
    const { tokens } = await generate(engine, requests);
    return requests.map((r) => tokens.get(r.id)!);
  };
  const seeds = Array.from({ length: count }, () => ints(2));
  const before = (await greedy(seeds, w.before)).map((text, i) => [...seeds[i]!, ...text]);
  const copies = await greedy(before, w.outputTokens);
  const after =
    w.after > 0
      ? await greedy(
          Array.from({ length: count }, () => ints(2)),
          w.after,
        )
      : before.map(() => []);
  const edits = before.map(() => ints(w.outputTokens));
  const held = copies.map((copy, i) => copy.map((t, j) => (w.editEvery > 0 && j % w.editEvery === w.editEvery - 1 ? edits[i]![j]! : t)));
  const prompts = before.map((b, i) => [...b, ...held[i]!, ...after[i]!, ...b.slice(-ANCHOR_TOKENS)]);
  const finals = await greedy(prompts, w.outputTokens);
  let same = 0;
  let total = 0;
  finals.forEach((final, i) => {
    final.forEach((t, j) => {
      total++;
      if (t === copies[i]![j]) same++;
    });
  });
  return { prompts, copyShare: total === 0 ? 0 : same / total };
}

/** One sequence's step of `positions` positions after `past` cached ones, timed on the runner alone: median wall ms. */
interface StepCost {
  readonly past: number;
  /** Steps of each kind timed. */
  readonly samples: number;
  readonly decodeMs: number;
  readonly verifyMs: number;
}

/**
 * What a verify step costs against a plain decode step, on the engine's runner without the
 * engine: one sequence, 1 position against num_speculative_tokens + 1 (the greedy head, as a
 * plain greedy step runs), the two interleaved so load from other processes falls on both alike;
 * medians of STEP_COST_SAMPLES each (fewer past STEP_COST_BUDGET_MS). The pool holds whatever its blocks held (the cost does not
 * depend on the values).
 */
async function measureStepCosts(config: EngineBenchConfig, modelPath: string, quick: boolean): Promise<StepCost[]> {
  const runner = await openModelRunner({ modelPath, device: 'cpu', intraOpNumThreads: config.threads, blockSize: config.blockSize, kvCacheBytes: 64 << 20 });
  try {
    const execute = runner.executeGreedy;
    if (!execute) throw new Error(`${modelPath} has no greedy head: speculation's step cost is measured on the greedy path`);
    const samples = quick ? 20 : STEP_COST_SAMPLES;
    const { blockSize } = runner.info;
    const costs: StepCost[] = [];
    for (const past of STEP_COST_PASTS) {
      const positions = 1 + config.speculativeTokens;
      if (Math.ceil((past + positions) / blockSize) > runner.info.numBlocks) throw new Error(`the step-cost pool holds ${runner.info.numBlocks} blocks, too few for ${past + positions} positions`);
      const blockTable = Array.from({ length: Math.ceil((past + positions) / blockSize) }, (_, i) => i);
      const plan = (count: number) => ({
        stepId: 0,
        releasedRequestIds: [],
        blocksToCopy: [],
        numScheduledTokens: count,
        scheduled: [{ requestId: 'step-cost', tokenIds: Array.from({ length: count }, (_, i) => 3 + i), numComputedTokens: past, blockTable, sample: true, isNew: false, numDraftTokens: count - 1 }],
      });
      const [decode, verify] = [plan(1), plan(positions)];
      const times: [number[], number[]] = [[], []];
      const began = performance.now();
      // Unmeasured pairs first (as many as measured, or 2 once past the budget), then measured ones until the count or the budget.
      let warm = 0;
      while (warm < samples && !(warm >= 2 && performance.now() - began > STEP_COST_BUDGET_MS / 2)) {
        for (const p of [decode, verify]) await execute(p, runner.info.shape.vocabSize);
        warm++;
      }
      const measuring = performance.now();
      while (times[0].length < samples && !(times[0].length >= 10 && performance.now() - measuring > STEP_COST_BUDGET_MS / 2)) {
        for (const [k, p] of [decode, verify].entries()) {
          const started = performance.now();
          await execute(p, runner.info.shape.vocabSize);
          times[k]!.push(performance.now() - started);
        }
      }
      costs.push({ past, samples: times[0].length, decodeMs: median(times[0]), verifyMs: median(times[1]) });
    }
    return costs;
  } finally {
    await runner.release();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

function concludeSpeculation(results: readonly CaseResult[], observed: SpecObservations, config: EngineBenchConfig, stepCosts: readonly StepCost[]) {
  const metrics = new Map<string, Record<string, unknown>>();
  const acceptanceOf = (id: string) => {
    const runs = observed.get(id) ?? [];
    const total = runs.map((run) => run.spec).reduce(addSpec, { numDrafts: 0, numDraftTokens: 0, numAcceptedTokens: 0, acceptedPerPosition: [] });
    const sequenceSteps = runs.reduce((sum, run) => sum + run.sequenceSteps, 0);
    return {
      ...total,
      tokensPerStep: sequenceSteps === 0 ? NaN : runs.reduce((sum, run) => sum + run.tokens, 0) / sequenceSteps,
      acceptance: total.numDrafts === 0 ? 0 : total.numAcceptedTokens / total.numDrafts,
      draftAcceptanceRate: total.numDraftTokens === 0 ? 0 : total.numAcceptedTokens / total.numDraftTokens,
    };
  };
  for (const r of results) metrics.set(r.id, acceptanceOf(r.id));
  const find = (group: string, variant: string, point: string) => results.find((r) => r.group === group && r.variant === variant && r.point === point);
  const rows: string[] = [
    '| workload | streams | off tok/s | on tok/s | on ÷ off | acceptance | target | met | tokens a step | ÷ tokens a step | no batch limit tok/s | ÷ off | acceptance |',
    '|---|---:|---:|---:|---:|---:|---:|:-:|---:|---:|---:|---:|---:|',
  ];
  const verdicts: string[] = [];
  const groups = [...new Set(results.map((r) => r.group))];
  for (const group of groups) {
    for (const c of config.concurrency) {
      const point = `c${c}`;
      const off = find(group, SPEC_VARIANT.off, point);
      const on = find(group, SPEC_VARIANT.on, point);
      const free = find(group, SPEC_VARIANT.unlimited, point);
      if (!off || !on) continue;
      const speed = (r: CaseResult | undefined) => (r ? off.stats.median / r.stats.median : NaN);
      const a = (r: CaseResult | undefined) => (r ? (metrics.get(r.id)!['acceptance'] as number) : NaN);
      // Tokens a sequence got per step it was in, on against off: the most speculation could give if a verify step cost what a decode step does.
      const perStep = (r: CaseResult | undefined) => (r ? (metrics.get(r.id)!['tokensPerStep'] as number) : NaN);
      const gain = perStep(on) / perStep(off);
      const target = c === 1 && a(on) >= MEASURABLE_ACCEPTANCE ? 0.8 * (1 + a(on)) : 0.97;
      const met = speed(on) >= target;
      verdicts.push(`${group} c${c}: ${speed(on).toFixed(2)}× (target ${target.toFixed(2)}) ${met ? 'met' : 'NOT met'}`);
      const tps = (r: CaseResult | undefined) => (r?.throughput ? r.throughput.perSecond.toFixed(1) : '—');
      rows.push(
        `| ${group} | ${c} | ${tps(off)} | ${tps(on)} | ${speed(on).toFixed(2)}× | ${a(on).toFixed(2)} | ≥ ${target.toFixed(2)} | ${met ? 'yes' : '**no**'} | ${perStep(on).toFixed(2)} | ${(speed(on) / gain).toFixed(2)} | ${tps(free)} | ${speed(free).toFixed(2)}× | ${a(free).toFixed(2)} |`,
      );
    }
  }
  const positions = 1 + config.speculativeTokens;
  const costRows = [
    `| past positions | decode step (1 position) ms | verify step (${positions} positions) ms | verify ÷ decode | pairs timed |`,
    '|---:|---:|---:|---:|---:|',
    ...stepCosts.map((c) => `| ${c.past} | ${c.decodeMs.toFixed(3)} | ${c.verifyMs.toFixed(3)} | ${(c.verifyMs / c.decodeMs).toFixed(2)}× | ${c.samples} |`),
  ];
  const costNote = `verify step ÷ decode step on the runner alone (one sequence, ${positions} positions against 1, interleaved, medians): ${stepCosts.map((c) => `${(c.verifyMs / c.decodeMs).toFixed(2)}× at ${c.past} past positions (${c.samples} pairs)`).join(', ')}`;
  const markdown = `## Speculation off vs on\n\n${rows.join('\n')}\n\n## Verify step against decode step\n\n${costRows.join('\n')}\n`;
  return { metrics, notes: [`targets: ${verdicts.join('; ')}`, costNote], results: markdown };
}

function speedupChart(label: string, method: string): ChartRequest {
  return {
    kind: 'bar',
    file: 'speculation-throughput.svg',
    title: `${method} speculation off vs on: output tok/s (${label})`,
    yLabel: 'output tok/s',
    select: () => true,
    seriesOf: (r) => r.variant,
    categoryOf: (r) => `${r.group} ${r.point}`,
    value: (r) => r.throughput?.perSecond ?? 0,
  };
}
