// Draft-model speculative decoding on the real tiny decoder: a draft in the same engine with its
// own runner and KV pool proposes, the target checks. With the target itself as its draft nearly
// every proposal holds; with its first three layers (a draft built from the same seed,
// test/support/draft-model.ts) about one in eight, with its first layer none. Whichever draft,
// greedy tokens are the target's own: a fast-check property over random
// arrival schedules, small pools (preemption), shared prompt prefixes (prefix hits) and aborts
// delivered between steps, as a step starts, or a few event-loop turns into it (during the
// draft's passes or the target's). After every step both pools' integrity is checked; at the end
// no draft block is held.
import * as ort from 'onnxruntime-node';
import fc from 'fast-check';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest, StepOutput, StepPlan } from '../../../src/contracts/generate.js';
import { openDraftRunner } from '../../../src/engine-worker/draft-model.js';
import { EngineCore, type EngineConfig } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import type { ModelRunner } from '../../../src/runners/model-runner.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { buildTruncatedDraft } from '../../support/draft-model.js';
import { type Delivery, GreedyReferences, type Moment, momentArb, promptTokens, stepDelivering, tinyEngineConfig } from '../../support/engine-steps.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const ONNX = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx');
const MAX_TOKENS = 16;

/** The truncated drafts' directories, by layer count. */
const draftDirs = new Map<number, string>();
let session: ort.InferenceSession;
let references: GreedyReferences;

beforeAll(async () => {
  for (const layers of [1, 3]) draftDirs.set(layers, await buildTruncatedDraft(layers));
  session = await ort.InferenceSession.create(join(ONNX, 'model.onnx'), { intraOpNumThreads: 1 });
  references = new GreedyReferences(session, ort, MAX_TOKENS);
}, 120_000);
afterAll(async () => {
  await session?.release();
  for (const dir of draftDirs.values()) await rm(dir, { recursive: true, force: true });
});

/** The target's greedy tokens decoding the prompt alone (the Optimum graph, no engine). */
const reference = (seed: number, length: number): Promise<number[]> => references.of(seed, length);

interface EngineOptions {
  readonly target: string;
  readonly draft: string | null;
  readonly numBlocks?: number;
  readonly maxNumSeqs?: number;
  readonly maxNumBatchedTokens?: number;
  readonly numSpeculativeTokens?: number;
}

async function openEngine(options: EngineOptions, log: (line: string) => void = () => {}, wrapDraft: (runner: ModelRunner) => ModelRunner = (runner) => runner): Promise<EngineCore> {
  const config: EngineConfig = {
    ...tinyEngineConfig({ modelPath: options.target, maxNumSeqs: options.maxNumSeqs ?? 8, maxNumBatchedTokens: options.maxNumBatchedTokens ?? 32, numBlocks: options.numBlocks ?? 256 }),
    ...(options.draft ? { speculative: { method: 'draft_model' as const, draftModelPath: options.draft, numSpeculativeTokens: options.numSpeculativeTokens ?? 4, disableByBatchSize: 8 } } : {}),
  };
  const runner = await openModelRunner(config);
  const draft = await openDraftRunner(config, runner.info);
  return EngineCore.create(config, runner, log, draft && wrapDraft(draft));
}

/** Counts the draft runner's forward passes (execute or executeGreedy), per step of the engine; the one `fails` picks throws `error`. */
class FailingDraft {
  /** Passes in each engine step so far (stepStarted() opens the next). */
  readonly passesPerStep: number[] = [];
  failed = false;

  constructor(
    private readonly fails: (passesPerStep: readonly number[]) => boolean,
    readonly error: Error,
  ) {}

  stepStarted(): void {
    this.passesPerStep.push(0);
  }

  wrap(runner: ModelRunner): ModelRunner {
    const pass = (): void => {
      if (!this.failed && this.fails(this.passesPerStep)) {
        this.failed = true;
        throw this.error;
      }
      this.passesPerStep[this.passesPerStep.length - 1]!++;
    };
    const { executeGreedy } = runner;
    return {
      get info() {
        return runner.info;
      },
      get stats() {
        return runner.stats;
      },
      execute: async (plan) => {
        pass();
        return runner.execute(plan);
      },
      ...(executeGreedy
        ? {
            executeGreedy: async (plan: StepPlan, sampleableVocab: number) => {
              pass();
              return executeGreedy.call(runner, plan, sampleableVocab);
            },
          }
        : {}),
      release: () => runner.release(),
    };
  }
}

const request = (id: string, prompt: readonly number[], maxTokens: number): GenerateRequest => ({
  id,
  promptTokenIds: prompt,
  sampling: GREEDY_SAMPLING,
  priority: 0,
  cacheSalt: null,
  stop: { maxTokens, minTokens: 0, eosTokenIds: [], ignoreEos: true, stopTokenIds: [] },
});

describe('draft-model speculation', () => {
  it('with the target as its own draft, nearly every proposal holds and the tokens are the target greedy ones', async () => {
    const target = join(ONNX, 'model_paged.segments');
    const lines: string[] = [];
    const engine = await openEngine({ target, draft: target }, (line) => lines.push(line));
    try {
      expect(lines.some((line) => /speculative decoding: draft model .*model_paged\.segments \(paged-native runner, 4 layers, its own KV pool of \d+ blocks/.test(line))).toBe(true);
      const prompts = [promptTokens(1, 9), promptTokens(2, 30), promptTokens(3, 3)];
      prompts.forEach((p, i) => engine.add(request(`r${i}`, p, MAX_TOKENS)));
      const tokens = new Map<string, number[]>();
      let steps = 0;
      let drafted = 0;
      let accepted = 0;
      while (engine.hasWork()) {
        const output = await engine.step();
        steps++;
        engine.checkIntegrity();
        drafted += output.specDecode?.numDraftTokens ?? 0;
        accepted += output.specDecode?.numAcceptedTokens ?? 0;
        for (const u of output.updates) tokens.set(u.requestId, [...(tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
      }
      for (const [i, p] of prompts.entries()) expect(tokens.get(`r${i}`), `r${i}`).toEqual(await reference(i + 1, p.length));
      expect(drafted).toBeGreaterThan(0);
      expect(accepted / drafted).toBeGreaterThan(0.9);
      // Prefill steps, then about MAX_TOKENS / 5 verify steps instead of MAX_TOKENS decode steps.
      expect(steps).toBeLessThan(MAX_TOKENS);
      expect(engine.draftKvStats()).toMatchObject({ numSequences: 0 });
      const { numFreeBlocks, numTotalBlocks } = engine.draftKvStats()!;
      expect(numFreeBlocks).toBe(numTotalBlocks);
    } finally {
      await engine.release();
    }
  }, 120_000);

  it('proposes for sampled rows from the draft distribution (q), seeds repeating, and for greedy rows with penalties their processed argmax', async () => {
    const target = join(ONNX, 'model_paged.segments');
    const sampled = (id: string, seed: number | null, sampling: Partial<GenerateRequest['sampling']>): GenerateRequest => ({
      ...request(id, promptTokens(seed ?? 9, 7), 24),
      sampling: { ...GREEDY_SAMPLING, seed, ...sampling },
    });
    const requests = [sampled('t1', 11, { temperature: 1 }), sampled('t07', 12, { temperature: 0.7, topK: 40, topP: 0.9 }), sampled('penalised', null, { repetitionPenalty: 1.3, logprobs: true })];
    const run = async (draft: string | null) => {
      const engine = await openEngine({ target, draft });
      try {
        for (const r of requests) engine.add(r);
        const tokens = new Map<string, number[]>();
        let drafted = 0;
        let accepted = 0;
        while (engine.hasWork()) {
          const output = await engine.step();
          engine.checkIntegrity();
          drafted += output.specDecode?.numDraftTokens ?? 0;
          accepted += output.specDecode?.numAcceptedTokens ?? 0;
          for (const u of output.updates) tokens.set(u.requestId, [...(tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
        }
        expect(engine.draftKvStats()?.numSequences ?? 0).toBe(0);
        return { tokens, drafted, accepted };
      } finally {
        await engine.release();
      }
    };
    const first = await run(target);
    const again = await run(target);
    const plain = await run(null);
    // With q the draft's own distribution (here the target's), nearly every proposal holds even at temperature 1.
    expect(first.accepted / first.drafted).toBeGreaterThan(0.8);
    expect(again.tokens).toEqual(first.tokens);
    expect(first.tokens.get('penalised')).toEqual(plain.tokens.get('penalised'));
  }, 120_000);

  it('catches the draft up on a long prompt in chunks of max_num_batched_tokens, proposing once caught up', async () => {
    const target = join(ONNX, 'model_paged.segments');
    const engine = await openEngine({ target, draft: target, maxNumBatchedTokens: 8 });
    try {
      engine.add(request('long', promptTokens(5, 40), MAX_TOKENS));
      const tokens: number[] = [];
      const perStep: number[] = [];
      while (engine.hasWork()) {
        const output = await engine.step();
        engine.checkIntegrity();
        for (const u of output.updates) {
          tokens.push(...u.newTokenIds);
          perStep.push(u.newTokenIds.length);
        }
      }
      expect(tokens).toEqual(await reference(5, 40));
      // The first token, then five decode steps of one token each while the draft takes in 41 tokens at 8 a step, then proposals.
      expect(perStep.slice(0, 6)).toEqual([1, 1, 1, 1, 1, 1]);
      expect(Math.max(...perStep)).toBeGreaterThan(1);
    } finally {
      await engine.release();
    }
  });

  /** Which draft pass fails, by the passes of each engine step so far (the last entry: this step's). */
  const failures: [string, (passesPerStep: readonly number[]) => boolean][] = [
    // Proposals made and checked before: the draft's KV holds their positions, the target's too.
    ['the first pass of a step', (steps) => steps.filter((n) => n > 0).length >= 2 && steps.at(-1) === 0],
    // The passes before it in the step wrote the draft's KV and made proposals.
    ['a later pass of a step', (steps) => steps.filter((n) => n > 0).length >= 1 && steps.at(-1) === 2],
  ];

  it.each(failures)(
    'a draft runner that fails at %s rejects the step with its error, nothing of the step applied (the engine worker then posts it as fatal and ends: main.ts)',
    async (_, fails) => {
      const target = join(ONNX, 'model_paged.segments');
      const draft = new FailingDraft(fails, new Error('draft model call failed'));
      const engine = await openEngine(
        { target, draft: target },
        () => {},
        (runner) => draft.wrap(runner),
      );
      try {
        const prompts = [promptTokens(1, 9), promptTokens(2, 30), promptTokens(3, 3)];
        prompts.forEach((p, i) => engine.add(request(`r${i}`, p, MAX_TOKENS)));
        const tokens = new Map<string, number[]>();
        for (let step = 0; ; step++) {
          expect(step, 'the draft never reached the failing pass').toBeLessThan(100);
          expect(engine.hasWork()).toBe(true);
          const before = engine.stats();
          draft.stepStarted();
          const stepped = engine.step();
          const output = await stepped.catch((error: unknown) => error);
          if (!draft.failed) {
            for (const u of (output as StepOutput).updates) tokens.set(u.requestId, [...(tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
            engine.checkIntegrity();
            continue;
          }
          // The runner's own error, unwrapped: main.ts reports its message as the engine's failure.
          expect(output).toBe(draft.error);
          // The draft runs before the step is planned: no request moved, no target block taken or freed, no token taken.
          expect(engine.stats()).toEqual(before);
          expect(engine.hasWork()).toBe(true);
          expect(engine.hasNews()).toBe(false);
          // Both pools' accounting still exact: what the draft allocated for the step is owned by its sequences.
          engine.checkIntegrity();
          break;
        }
        // Every token delivered before the failure is the target's greedy one.
        for (const [i, p] of prompts.entries()) {
          const got = tokens.get(`r${i}`) ?? [];
          expect((await reference(i + 1, p.length)).slice(0, got.length), `r${i}`).toEqual(got);
        }
        expect(draft.passesPerStep.filter((n) => n > 0).length).toBeGreaterThan(0);
      } finally {
        await engine.release();
      }
    },
    120_000,
  );

  it('is off with a past_key_values target, and opens no draft runner', async () => {
    const lines: string[] = [];
    const engine = await openEngine({ target: join(ONNX, 'model.onnx'), draft: join(ONNX, 'model_paged.segments') }, (line) => lines.push(line));
    await engine.release();
    expect(lines).toContain('speculative_config: off — checking proposals needs attention_backend paged (this model runs past_key_values)');
    expect(engine.draftKvStats()).toBeNull();
  });
});

interface RequestCase {
  readonly promptSeed: number;
  readonly promptLength: number;
  readonly maxTokens: number;
  readonly arrivalStep: number;
  readonly abort: { readonly afterTokens: number; readonly moment: Moment } | null;
  /** Sampled at temperature 1 (seeded): its draft proposals carry q, and only its length and the pools are checked. */
  readonly sampled: boolean;
}

interface Scenario {
  readonly requests: readonly RequestCase[];
  readonly maxNumSeqs: number;
  readonly maxNumBatchedTokens: number;
  readonly numBlocks: number;
  readonly numSpeculativeTokens: number;
  readonly target: 'model_paged.onnx' | 'model_paged.segments';
  /** The draft's layers: 4 is the target itself. */
  readonly draftLayers: 1 | 3 | 4;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  requests: fc.array(
    fc.record({
      promptSeed: fc.integer({ min: 0, max: 3 }),
      promptLength: fc.integer({ min: 1, max: 40 }),
      maxTokens: fc.integer({ min: 1, max: MAX_TOKENS }),
      arrivalStep: fc.integer({ min: 0, max: 15 }),
      abort: fc.option(fc.record({ afterTokens: fc.integer({ min: 0, max: 12 }), moment: momentArb(6) }), { freq: 3 }),
      sampled: fc.boolean(),
    }),
    { minLength: 1, maxLength: 10 },
  ),
  maxNumSeqs: fc.integer({ min: 2, max: 8 }),
  maxNumBatchedTokens: fc.integer({ min: 8, max: 40 }),
  // 16 blocks of 4 fit the longest request (40 + 16 positions) but few at once: preemption.
  numBlocks: fc.constantFrom(16, 16, 16, 20, 48, 256),
  numSpeculativeTokens: fc.integer({ min: 1, max: 5 }),
  target: fc.constantFrom('model_paged.onnx' as const, 'model_paged.segments' as const),
  draftLayers: fc.constantFrom(1 as const, 3 as const, 3 as const, 4 as const),
});

const BETWEEN: Moment = { kind: 'between' };
const totals = { steps: 0, drafted: 0, accepted: 0, preemptions: 0, prefixHits: 0, midStepAborts: 0 };

/** Drives one scenario through a fresh engine and its draft, as the engine worker's loop does. */
async function run(scenario: Scenario): Promise<{ tokens: Map<string, number[]>; finish: Map<string, string> }> {
  const draft = scenario.draftLayers === 4 ? join(ONNX, 'model_paged.segments') : join(draftDirs.get(scenario.draftLayers)!, 'onnx', 'model_paged.segments');
  const engine = await openEngine({ ...scenario, target: join(ONNX, scenario.target), draft });
  const tokens = new Map<string, number[]>();
  const finish = new Map<string, string>();
  const aborted = new Set<string>();
  const collect = (output: StepOutput): void => {
    expect(output.rejections).toEqual([]);
    totals.drafted += output.specDecode?.numDraftTokens ?? 0;
    totals.accepted += output.specDecode?.numAcceptedTokens ?? 0;
    for (const u of output.updates) {
      tokens.set(u.requestId, [...(tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
      if (u.finishReason !== null) finish.set(u.requestId, u.finishReason);
    }
  };
  try {
    const lastArrival = Math.max(...scenario.requests.map((r) => r.arrivalStep));
    for (let step = 0; step < 2000; step++) {
      const due: Delivery[] = [];
      scenario.requests.forEach((c, i) => {
        const id = `r${i}`;
        if (c.arrivalStep === step) {
          const r = request(id, promptTokens(c.promptSeed, c.promptLength), c.maxTokens);
          due.push({ moment: BETWEEN, deliver: () => engine.add(c.sampled ? { ...r, sampling: { ...r.sampling, temperature: 1, seed: i } } : r) });
        }
        if (c.abort && c.arrivalStep < step && !aborted.has(id) && !finish.has(id) && (tokens.get(id)?.length ?? 0) >= c.abort.afterTokens) {
          aborted.add(id);
          due.push({ moment: c.abort.moment, deliver: () => engine.abort(id) });
        }
      });
      const { output, stepped, midStep } = await stepDelivering(engine, due);
      if (output) collect(output);
      if (!stepped) {
        if (step > lastArrival && !engine.hasWork() && !engine.hasNews()) break;
        continue;
      }
      totals.steps++;
      totals.midStepAborts += midStep;
      engine.checkIntegrity();
    }
    expect(engine.hasWork()).toBe(false);
    expect(engine.stats().kvCacheUsage, 'target blocks held after every request ended').toBe(0);
    const draft = engine.draftKvStats()!;
    expect(draft.numFreeBlocks, 'draft blocks held after every request ended').toBe(draft.numTotalBlocks);
    expect(draft.numSequences).toBe(0);
    totals.preemptions += engine.stats().numPreemptions;
    totals.prefixHits += engine.stats().prefixCacheHits;
    for (const id of aborted) if (!finish.has(id)) throw new Error(`${id} was aborted but never finished`);
    return { tokens, finish };
  } finally {
    await engine.release();
  }
}

describe('draft-model speculation (property-based)', () => {
  it('gives the target greedy tokens under staggered arrivals, preemption, prefix hits and aborts mid-step, sampled rows beside them, and frees every draft block', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const outcome = await run(scenario);
        for (const [i, c] of scenario.requests.entries()) {
          const id = `r${i}`;
          const expected = (await reference(c.promptSeed, c.promptLength)).slice(0, c.maxTokens);
          const got = outcome.tokens.get(id) ?? [];
          if (c.sampled) expect(got.length, `${id} output length`).toBeLessThanOrEqual(c.maxTokens);
          else if (outcome.finish.get(id) === 'length') expect(got, `${id} output`).toEqual(expected);
          else expect(expected.slice(0, got.length), `${id} output before its abort`).toEqual(got);
        }
      }),
      { numRuns: 25 },
    );
    console.log(
      `draft-model property: ${totals.steps} steps, ${totals.drafted} proposed, ${totals.accepted} accepted, ${totals.preemptions} preemptions, ${totals.prefixHits} prefix-hit tokens, ${totals.midStepAborts} mid-step aborts`,
    );
    expect(totals.drafted).toBeGreaterThan(0);
    expect(totals.accepted).toBeGreaterThan(0);
    expect(totals.preemptions).toBeGreaterThan(0);
    expect(totals.prefixHits).toBeGreaterThan(0);
    expect(totals.midStepAborts).toBeGreaterThan(0);
  }, 600_000);
});
