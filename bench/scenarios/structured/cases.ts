// The timed cases of the structured-output benchmark. Throughput: the same random prompts sent to
// one engine with and without a JSON-schema grammar, so the variants differ only in the mask work.
// Compile: the schema set compiled on a fresh GrammarEngine (cold) and again on a warm one (cached).
// What a run observes beyond its wall time is kept in `Observed`.

import { SeededRandom, seedFor } from '../../../kernels/onnx/random.js';
import type { GenerateRequest, GrammarSpec, StepOutput } from '../../../src/contracts/generate.js';
import type { EngineClient } from '../../../src/engine-client/engine-client.js';
import { GrammarEngine } from '../../../src/grammar/grammar-engine.js';
import { caseId, type BenchCase, type RunSlot } from '../../harness/types.js';
import { benchRequest, outputTokens, randomTokens, runWorkload } from '../engine/workload.js';
import type { StructuredBenchConfig } from './config.js';
import { SCHEMAS } from './schemas.js';

export const SEED = 20_261_211;

export const VARIANT = { unconstrained: 'unconstrained', constrained: 'json schema', cold: 'cold', cached: 'cached' } as const;
export const GROUP = { throughput: 'throughput', compile: 'compile' } as const;

const item = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 16 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    role: { enum: ['admin', 'user', 'guest'] },
    active: { type: 'boolean' },
  },
  required: ['name', 'age', 'role', 'active'],
  additionalProperties: false,
};

/**
 * Every constrained request's schema: an extraction-style list of records (strings, bounded
 * integers, enums, booleans). minItems 12 needs well over 128 tokens, so no constrained request
 * ends its grammar early and both variants produce the same number of tokens.
 */
export const THROUGHPUT_SCHEMA = { type: 'object', properties: { people: { type: 'array', items: item, minItems: 12 } }, required: ['people'], additionalProperties: false };

export const THROUGHPUT_GRAMMAR: GrammarSpec = { kind: 'json_schema', schema: JSON.stringify(THROUGHPUT_SCHEMA) };

/** One run's grammar work, summed from its step messages (StepOutput.grammarMasks). */
export interface MaskTally {
  steps: number;
  maskedSteps: number;
  masks: number;
  maskMs: number;
  /** Time the engine waited for the grammar worker after its forward pass, ms: mask work the overlap did not hide. */
  waitMs: number;
  /** Greedy rows whose unmasked candidates were tried on their matcher, and how many took none (each then masked). */
  tried: number;
  refused: number;
  /** Each masked step's mask time, ms. */
  readonly stepMaskMs: number[];
}

export interface ThroughputRun {
  readonly wallMs: number;
  readonly outputTokens: number;
  readonly masks: MaskTally;
}

export interface CompileRun {
  /** Each schema's compile() time, ms (cache misses on the cold engine, hits on the warm one). */
  readonly compileMs: readonly number[];
  /** Cold runs: the fresh engine's tokenizer-info build, ms. */
  readonly openMs: number | null;
}

export interface Observed {
  readonly throughput: Map<string, ThroughputRun[]>;
  readonly compile: Map<string, CompileRun[]>;
}

/** Routes the engine's step messages to the run in progress (runs never overlap). */
export class StepRecorder {
  private current: MaskTally | null = null;

  constructor(engine: EngineClient) {
    engine.onStep((output) => this.record(output));
  }

  async during<T>(work: () => Promise<T>): Promise<{ result: T; masks: MaskTally }> {
    const masks: MaskTally = { steps: 0, maskedSteps: 0, masks: 0, maskMs: 0, waitMs: 0, tried: 0, refused: 0, stepMaskMs: [] };
    this.current = masks;
    try {
      return { result: await work(), masks };
    } finally {
      this.current = null;
    }
  }

  private record(output: StepOutput): void {
    const tally = this.current;
    if (!tally || output.updates.length === 0) return;
    tally.steps++;
    if (!output.grammarMasks) return;
    tally.maskedSteps++;
    tally.masks += output.grammarMasks.count;
    tally.maskMs += output.grammarMasks.ms;
    tally.waitMs += output.grammarMasks.waitMs;
    tally.tried += output.grammarMasks.tried;
    tally.refused += output.grammarMasks.refused;
    tally.stepMaskMs.push(output.grammarMasks.ms);
  }
}

export function throughputCases(config: StructuredBenchConfig, engine: EngineClient, recorder: StepRecorder, observed: Observed): BenchCase[] {
  return config.concurrency.flatMap((concurrency) =>
    (['unconstrained', 'constrained'] as const).map((key) => {
      const info = {
        group: GROUP.throughput,
        variant: VARIANT[key],
        point: `c${concurrency}`,
        params: { concurrency, promptTokens: config.promptTokens, outputTokens: config.outputTokens },
        work: { count: concurrency * config.outputTokens, unit: 'tok' },
      };
      let run = 0;
      return {
        ...info,
        run: async (slot?: RunSlot) => {
          // The same prompts for both variants of a point and repetition: only the grammar differs.
          const random = new SeededRandom(seedFor(SEED, `${info.point}/${slot?.warmup ? 'w' : 'm'}${slot?.rep ?? run}`));
          run++;
          const requests = Array.from({ length: concurrency }, (_, i) => throughputRequest(`${key}-c${concurrency}-${run}-${i}`, random, config, key === 'constrained'));
          const { result, masks } = await recorder.during(() => runWorkload(engine, requests));
          const tokens = outputTokens(result);
          if (tokens !== concurrency * config.outputTokens) throw new Error(`${caseId(info)}: ${tokens} output tokens, expected ${concurrency * config.outputTokens}`);
          if (!slot?.warmup) push(observed.throughput, caseId(info), { wallMs: result.wallMs, outputTokens: tokens, masks });
        },
      };
    }),
  );
}

export function throughputRequest(id: string, random: SeededRandom, config: StructuredBenchConfig, constrained: boolean): GenerateRequest {
  const request = benchRequest(id, randomTokens(random, config.promptTokens), config.outputTokens);
  return constrained ? { ...request, grammar: THROUGHPUT_GRAMMAR } : request;
}

export function schemaSpecs(config: StructuredBenchConfig): GrammarSpec[] {
  return SCHEMAS.slice(0, config.schemaCount).map((schema) => ({ kind: 'json_schema', schema: JSON.stringify(schema) }));
}

/**
 * Cold: every run opens a fresh GrammarEngine (its own xgrammar instances and tokenizer info) and
 * compiles each schema once, each a miss. Cached: `warm` has compiled the set already, so each
 * compile is a hit. compile() is timed whole: limits, the checker's parse and the compile.
 */
export function compileCases(config: StructuredBenchConfig, tokenizerPath: string, vocabSize: number, warm: GrammarEngine, observed: Observed): BenchCase[] {
  const specs = schemaSpecs(config);
  return (['cold', 'cached'] as const).map((key) => {
    const info = {
      group: GROUP.compile,
      variant: VARIANT[key],
      point: `${specs.length} schemas`,
      params: { schemas: specs.length },
      work: { count: specs.length, unit: 'schema' },
    };
    return {
      ...info,
      run: async (slot?: RunSlot) => {
        let openMs: number | null = null;
        let engine = warm;
        if (key === 'cold') {
          const started = performance.now();
          engine = await GrammarEngine.open({ tokenizerPath, logitsVocabSize: vocabSize });
          openMs = performance.now() - started;
        }
        const compileMs: number[] = [];
        for (const spec of specs) {
          const started = performance.now();
          await engine.compile(spec);
          compileMs.push(performance.now() - started);
        }
        // A cold run's engine is its own: freed here so runs do not pile up WASM instances.
        if (engine !== warm) await engine.dispose();
        if (!slot?.warmup) push(observed.compile, caseId(info), { compileMs, openMs });
      },
    };
  });
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  map.set(key, [...(map.get(key) ?? []), value]);
}
