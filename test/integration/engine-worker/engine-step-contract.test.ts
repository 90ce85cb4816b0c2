// The step contract, driven by fast-check on the real tiny decoder: random arrivals, chunked
// prefills, prefix hits, preemptions (small KV pools), and aborts / stop-string ends injected at
// random moments — between steps, right after a step started, or a few event-loop turns into it
// (between the runner's decode and prefill calls, which is where a client disconnect used to
// kill the engine). After every step: no exception and exact block accounting. At the end: every
// request got exactly one final update, no block is held, every request left alone produced the
// tokens it produces decoded alone, and every ended one produced a prefix of them. Each scenario
// runs on one of the two runners (PastKeyValuesRunner or PagedRunner), both held to the same
// contract and the same reference.
import * as ort from 'onnxruntime-node';
import fc from 'fast-check';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest, StepOutput } from '../../../src/contracts/generate.js';
import { EngineCore } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { type Delivery, GreedyReferences, type Moment, momentArb, promptTokens, stepDelivering, tinyEngineConfig } from '../../support/engine-steps.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const ONNX = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx');
/** The reference decodes alone on the Optimum graph; scenarios run on either runner. */
const MODEL = join(ONNX, 'model.onnx');
const MAX_TOKENS = 16;
const GREEDY = GREEDY_SAMPLING;

interface RequestCase {
  readonly promptSeed: number;
  readonly promptLength: number;
  readonly maxTokens: number;
  readonly arrivalStep: number;
  readonly arrivalMoment: Moment;
  /** Ended by the client (abort) or the output processor (stop string) once it has this many tokens. */
  readonly end: { readonly kind: 'abort' | 'stop'; readonly afterTokens: number; readonly moment: Moment } | null;
}

interface Scenario {
  readonly requests: readonly RequestCase[];
  readonly maxNumSeqs: number;
  readonly maxNumBatchedTokens: number;
  readonly numBlocks: number;
  /** The graph, so the runner: the Optimum model (PastKeyValuesRunner) or the paged one (PagedRunner), same weights. */
  readonly graph: 'model.onnx' | 'model_paged.onnx';
}

const moment = momentArb(4);
const requestArb: fc.Arbitrary<RequestCase> = fc.record({
  promptSeed: fc.integer({ min: 0, max: 3 }),
  promptLength: fc.integer({ min: 1, max: 40 }),
  maxTokens: fc.integer({ min: 1, max: MAX_TOKENS }),
  arrivalStep: fc.integer({ min: 0, max: 25 }),
  arrivalMoment: moment,
  end: fc.option(fc.record({ kind: fc.constantFrom('abort' as const, 'stop' as const), afterTokens: fc.integer({ min: 0, max: 12 }), moment }), { freq: 2 }),
});
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  requests: fc.array(requestArb, { minLength: 1, maxLength: 12 }),
  maxNumSeqs: fc.integer({ min: 1, max: 8 }),
  maxNumBatchedTokens: fc.integer({ min: 4, max: 32 }),
  // 16 blocks of 4 fit the longest request (40 + 16 positions) but few at once: preemption.
  numBlocks: fc.constantFrom(16, 16, 20, 48, 256),
  graph: fc.constantFrom('model.onnx' as const, 'model_paged.onnx' as const),
});

let session: ort.InferenceSession;
let references: GreedyReferences;
let totalSteps = 0;
let totalMidStepMessages = 0;
let totalPreemptions = 0;
let totalPrefixHits = 0;

const toRequest = (id: string, c: RequestCase): GenerateRequest => ({
  id,
  promptTokenIds: promptTokens(c.promptSeed, c.promptLength),
  sampling: GREEDY,
  priority: 0,
  cacheSalt: null,
  stop: { maxTokens: c.maxTokens, minTokens: 0, eosTokenIds: [], ignoreEos: true, stopTokenIds: [] },
});

interface Outcome {
  readonly tokens: Map<string, number[]>;
  readonly finish: Map<string, string>;
  readonly ended: Set<string>;
}

/** Drives one scenario through a fresh engine, the way the engine worker's loop and message handler do. */
async function run(scenario: Scenario): Promise<Outcome> {
  const config = tinyEngineConfig({ ...scenario, modelPath: join(ONNX, scenario.graph) });
  const engine = EngineCore.create(config, await openModelRunner(config), () => {});
  const outcome: Outcome = { tokens: new Map(), finish: new Map(), ended: new Set() };
  const collect = (output: StepOutput): void => {
    expect(output.rejections).toEqual([]);
    for (const u of output.updates) {
      expect(outcome.finish.has(u.requestId), `update for ${u.requestId} after its final one`).toBe(false);
      outcome.tokens.set(u.requestId, [...(outcome.tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
      if (u.finishReason !== null) outcome.finish.set(u.requestId, u.finishReason);
    }
  };
  try {
    const lastArrival = Math.max(...scenario.requests.map((r) => r.arrivalStep));
    for (let step = 0; step < 5000; step++) {
      const due: Delivery[] = [];
      scenario.requests.forEach((c, i) => {
        const id = `r${i}`;
        if (c.arrivalStep === step) due.push({ moment: c.arrivalMoment, deliver: () => engine.add(toRequest(id, c)) });
        const endDue = c.end && c.arrivalStep < step && !outcome.ended.has(id) && !outcome.finish.has(id) && (outcome.tokens.get(id)?.length ?? 0) >= c.end.afterTokens;
        if (endDue && c.end) {
          const { kind } = c.end;
          outcome.ended.add(id);
          due.push({ moment: c.end.moment, deliver: () => engine.abort(id, kind) });
        }
      });
      const { output, stepped, midStep } = await stepDelivering(engine, due);
      if (output) collect(output);
      if (!stepped) {
        if (step > lastArrival && !engine.hasWork() && !engine.hasNews()) break;
        continue;
      }
      totalSteps++;
      totalMidStepMessages += midStep;
      engine.checkIntegrity();
    }
    expect(engine.hasWork()).toBe(false);
    expect(engine.stats().kvCacheUsage, 'blocks still held after every request ended').toBe(0);
    engine.checkIntegrity();
    totalPreemptions += engine.stats().numPreemptions;
    totalPrefixHits += engine.stats().prefixCacheHits;
    return outcome;
  } finally {
    await engine.release();
  }
}

beforeAll(async () => {
  session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
  references = new GreedyReferences(session, ort, MAX_TOKENS);
});

afterAll(async () => {
  await session?.release();
});

describe('engine step contract (property-based, real tiny decoder)', () => {
  it('survives aborts and stops at any moment of a step; survivors decode as if alone', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const outcome = await run(scenario);
        for (const [i, c] of scenario.requests.entries()) {
          const id = `r${i}`;
          const expected = (await references.of(c.promptSeed, c.promptLength)).slice(0, c.maxTokens);
          const got = outcome.tokens.get(id) ?? [];
          const reason = outcome.finish.get(id);
          expect(reason, `${id} never finished`).toBeDefined();
          if (reason === 'length') {
            expect(got, `${id} output`).toEqual(expected);
          } else {
            expect(outcome.ended.has(id), `${id} ended (${reason}) without being ended by the test`).toBe(true);
            expect(reason).toBe(c.end!.kind);
            expect(expected.slice(0, got.length), `${id} output before its end`).toEqual(got);
          }
        }
      }),
      { numRuns: 40 },
    );
    // The property really exercised the moments it is about. (The scenarios are random: 40 runs
    // have given 980 to well over 1,000 steps, so the floor is a sanity bound, not a tight one.)
    expect(totalSteps).toBeGreaterThan(500);
    expect(totalMidStepMessages).toBeGreaterThan(50);
    expect(totalPreemptions).toBeGreaterThan(0);
    expect(totalPrefixHits).toBeGreaterThan(0);
    console.log(`step contract: ${totalSteps} steps, ${totalMidStepMessages} mid-step messages, ${totalPreemptions} preemptions, ${totalPrefixHits} prefix hits`);
  }, 600_000);
});
