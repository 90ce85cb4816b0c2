// `npm run bench -- structured`: grammar-constrained decoding on the bench decoder, in one
// interleaved run — output tokens/s at several concurrencies with every request constrained by a
// JSON schema vs none (the same prompts, one engine, so only the mask work differs), the mask
// time per step and per token from the step messages, and compile time over the schema set on a
// fresh GrammarEngine (cold) and a warm one (cached). The engine runs in its worker thread
// exactly as the server runs it.

import { loadavg } from 'node:os';
import { join } from 'node:path';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { ensureBuilt, type BuiltModel } from '../../../models/catalog.js';
import { EngineClient } from '../../../src/engine-client/engine-client.js';
import { GrammarEngine } from '../../../src/grammar/grammar-engine.js';
import { messageOf } from '../../harness/runner.js';
import type { PreparedScenario, Scenario, ScenarioContext } from '../../harness/scenario.js';
import type { CaseResult } from '../../harness/types.js';
import { runWorkload } from '../engine/workload.js';
import { StepRecorder, THROUGHPUT_SCHEMA, VARIANT, compileCases, schemaSpecs, throughputCases, throughputRequest, type Observed } from './cases.js';
import { STRUCTURED_FLAGS, engineData, structuredBenchConfig, type StructuredBenchConfig } from './config.js';
import { conclude, structuredCharts } from './report.js';

/** How the scenario gets the decoder directory (with its tokenizer.json); tests may pass another source. */
export type DecoderSource = (size: StructuredBenchConfig['size']) => Promise<Pick<BuiltModel, 'modelPath' | 'dir'>>;

export function structuredScenario(source: DecoderSource = (size) => ensureBuilt('qwen3', size)): Scenario {
  return {
    name: 'structured',
    description: 'Structured outputs: JSON-schema-constrained vs unconstrained throughput, mask ms per step/token, compile p50/p99 cold and cached',
    flags: STRUCTURED_FLAGS,
    // The engine and the grammar engines are warmed in prepare(); a full run is minutes per repetition.
    defaults: { full: { reps: 2, warmup: 0 }, quick: { reps: 1, warmup: 0 }, baseline: VARIANT.unconstrained },
    prepare: (context) => prepareStructured(source, context),
  };
}

async function prepareStructured(source: DecoderSource, context: ScenarioContext): Promise<PreparedScenario> {
  const config = structuredBenchConfig(context.flags, context.quick);
  const loadAtStart = loadavg();
  context.log(`building qwen3 ${config.size}…`);
  const built = await source(config.size);
  const modelPath = built.modelPath('fp32');
  const tokenizerPath = join(built.dir, 'tokenizer.json');
  context.log('starting the engine…');
  const engine = await EngineClient.start(engineData(config, modelPath, tokenizerPath), (line) => context.log(`[engine] ${line}`));
  const dispose = () => engine.close().catch(() => {});
  try {
    const recorder = new StepRecorder(engine);
    const observed: Observed = { throughput: new Map(), compile: new Map() };
    context.log('opening the warm GrammarEngine and compiling the schema set…');
    const warm = await GrammarEngine.open({ tokenizerPath, logitsVocabSize: engine.info.vocabSize });
    for (const spec of schemaSpecs(config)) await warm.compile(spec);
    context.log('warming the engine (compiles the throughput schema)…');
    await warmUp(config, engine);
    const cases = [...throughputCases(config, engine, recorder, observed), ...compileCases(config, tokenizerPath, engine.info.vocabSize, warm, observed)];
    return {
      cases,
      skipped: [],
      charts: structuredCharts(config, `qwen3 ${config.size}`),
      notes: notesFor(config, engine, loadAtStart),
      settings: { ...config, modelPath },
      conclude: (results: readonly CaseResult[]) => {
        const conclusion = conclude(results, observed, config, VARIANT.unconstrained);
        const load = loadavg()
          .map((x) => x.toFixed(2))
          .join(' / ');
        const notes = [...conclusion.notes, `load average (1/5/15 min) at the end: ${load} on ${config.threads} threads`];
        if (config.size !== 'bench') notes.push(`the targets are set for the bench decoder; on the ${config.size} one they only show the pipeline works`);
        return { ...conclusion, notes };
      },
      dispose,
    };
  } catch (error) {
    await dispose();
    throw new Error(`structured benchmark setup failed: ${messageOf(error)}`);
  }
}

/** Both variants at the largest concurrency once, so ORT's arenas are warm and the schema is compiled. */
async function warmUp(config: StructuredBenchConfig, engine: EngineClient): Promise<void> {
  const random = new SeededRandom(7);
  const top = Math.max(...config.concurrency);
  for (const constrained of [false, true]) {
    const requests = Array.from({ length: top }, (_, i) => throughputRequest(`warm-${constrained}-${i}`, random, { ...config, outputTokens: 4 }, constrained));
    await runWorkload(engine, requests);
  }
}

function notesFor(config: StructuredBenchConfig, engine: EngineClient, load: readonly number[]): string[] {
  const { info } = engine;
  return [
    `decoder: ${info.numLayers} layers, vocab ${info.vocabSize.toLocaleString('en-US')}; one engine, max_num_seqs ${Math.max(...config.concurrency)}, max_num_batched_tokens ${config.maxNumBatchedTokens}, ${config.threads} intra-op threads, prefix caching off (both variants send the same prompts)`,
    `throughput: every request of a point submitted at once, random prompts of ${config.promptTokens} tokens, ${config.outputTokens} output tokens, greedy, ignore_eos; tok/s = output tokens / wall time of the whole point (prefill included), median of the runs; the constrained variant's grammar is ${JSON.stringify(THROUGHPUT_SCHEMA)}`,
    "mask time: StepOutput.grammarMasks of every step message (the grammar worker's time: masks computed while the engine thread runs its forward pass, and greedy rows' candidate tries after it, with the mask of a row whose grammar took none); per token = total mask ms / masks; wait = time the step still waited for the grammar worker after the forward pass",
    `compile: GrammarEngine.compile() of the first ${config.schemaCount} schemas of bench/scenarios/structured/schemas.ts (the random-walk test's set) as json_schema specs, timed whole (limits, checker parse, xgrammar compile); cold = a fresh GrammarEngine per run (its tokenizer-info build reported apart), cached = the warm engine's cache hits`,
    `load average (1/5/15 min) at the start: ${load.map((x) => x.toFixed(2)).join(' / ')} on ${config.threads} threads`,
  ];
}
