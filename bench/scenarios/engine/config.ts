// Settings of `npm run bench -- engine`: the workload shapes, the engines' configuration, and the
// flags that change them. Full mode runs the bench decoder; --quick the tiny one with small shapes.

import { availableParallelism } from 'node:os';
import type { EngineWorkerData } from '../../../src/contracts/engine-messages.js';
import type { WeightPrecision } from '../../../kernels/linear.js';
import { DECODER_PRECISIONS, type ModelSize } from '../../../models/common/model-files.js';
import { DECODER_CONFIGS } from '../../../models/qwen3/config.js';
import { intList, positiveInt, stringList } from '../../harness/args.js';
import type { FlagSpec, FlagValues } from '../../harness/scenario.js';
import { SWEEP_RUNNERS, type SweepRunner } from './context-sweep.js';

export interface EngineBenchConfig {
  readonly size: ModelSize;
  /** The decoder variant every engine and the floor run (fp32 by default): the first of `precisions`. */
  readonly precision: WeightPrecision;
  /** The variants a context sweep runs side by side (each runner and the floor at each), in table order. */
  readonly precisions: readonly WeightPrecision[];
  readonly threads: number;
  /** Concurrent requests of the throughput points; the batched engine's maxNumSeqs is the largest. */
  readonly concurrency: readonly number[];
  readonly promptTokens: number;
  readonly outputTokens: number;
  /** Forward-floor decode steps timed per run (one run is one harness sample). */
  readonly floorSteps: number;
  /** TTFT: the prefix shared with earlier requests, the fresh suffix, and requests per run. */
  readonly prefixTokens: number;
  readonly suffixTokens: number;
  readonly ttftRequests: number;
  /** KV waste: requests of the mixed workload and their length ranges [min, max]. */
  readonly mixedRequests: number;
  readonly mixedPrompt: readonly [number, number];
  readonly mixedOutput: readonly [number, number];
  readonly maxModelLen: number;
  readonly maxNumBatchedTokens: number;
  readonly blockSize: number;
  readonly kvCacheBytes: number;
  /** Profile the engine step (copy ms, ORT calls, ORT ms) on an EngineCore before the interleaved runs. */
  readonly profile: boolean;
  /** Context sweep: prompt lengths at which a whole throughput workload runs on each runner, by phase (empty: none). */
  readonly sweep: readonly number[];
  /** Run only the context sweep (no throughput, TTFT, KV-waste cases or step profile). */
  readonly sweepOnly: boolean;
  /** The runners the sweep compares (all by default; the forward floor always runs). */
  readonly sweepRunners: readonly SweepRunner[];
  /** Run only speculative decoding off vs on (speculation.ts). */
  readonly speculation: boolean;
  /** num_speculative_tokens of the speculating engines. */
  readonly speculativeTokens: number;
  /** disable_by_batch_size of the 'spec on' engine; null: the engine's default. */
  readonly disableByBatchSize: number | null;
  /** A `conveyor convert` output directory the speculation run serves instead of the bench decoder (its onnx/ paged files); null: the bench decoder. */
  readonly modelDir: string | null;
  /** A draft model's `conveyor convert` output: the speculating engines propose with it (speculative_config method draft_model) instead of n-gram lookup; null: n-gram. */
  readonly draftDir: string | null;
  /** Serve the copier (copier.ts: a model that copies its context, made by make_copier.py) instead of the bench decoder. */
  readonly copier: boolean;
  /** With copier: propose with its draft (make_copier.py --draft) instead of n-gram lookup. */
  readonly copierDraft: boolean;
}

export const ENGINE_FLAGS: Readonly<Record<string, FlagSpec>> = {
  size: { type: 'string', usage: '--size tiny|bench', description: 'decoder to run (default bench; quick tiny)' },
  precision: {
    type: 'string',
    usage: '--precision fp32|fp16|int8|q4|q4f16[,…]',
    description: 'decoder variant to serve (default fp32); with --sweep-only, several side by side in one run (each runner and the floor at each, ratios to the first)',
  },
  threads: { type: 'string', usage: '--threads N', description: 'intraOpNumThreads of every session (default: number of cores)' },
  concurrency: { type: 'string', usage: '--concurrency 1,8,32', description: 'concurrent requests per throughput point (quick 1,4,8)' },
  prompt: { type: 'string', usage: '--prompt N', description: 'prompt tokens per throughput request (default 128; quick 16)' },
  output: { type: 'string', usage: '--output N', description: 'output tokens per throughput request (default 128; quick 8)' },
  prefix: { type: 'string', usage: '--prefix N', description: 'TTFT shared prefix tokens (default 1000; quick 64)' },
  mixed: { type: 'string', usage: '--mixed N', description: 'requests of the mixed KV-waste workload (default 16; quick 8)' },
  sweep: {
    type: 'string',
    usage: '--sweep 128,1024,2048',
    description: 'context sweep: a whole workload per prompt length and concurrency on both runners (past_key_values, paged) and the forward floor, by runner phase (default none)',
  },
  'sweep-only': { type: 'boolean', usage: '--sweep-only', description: 'run only the context sweep' },
  'sweep-runners': {
    type: 'string',
    usage: `--sweep-runners ${SWEEP_RUNNERS.join(',')}`,
    description: 'the runners the context sweep compares (default all; the forward floor always runs)',
  },
  speculation: {
    type: 'boolean',
    usage: '--speculation',
    description: 'run only speculative decoding (n-gram, or --draft) off vs on (copy-heavy and random workloads, acceptance beside tok/s) on the paged runner',
  },
  'spec-tokens': { type: 'string', usage: '--spec-tokens N', description: 'num_speculative_tokens with --speculation (default 4)' },
  'disable-by-batch-size': { type: 'string', usage: '--disable-by-batch-size N', description: "disable_by_batch_size of --speculation's 'spec on' engine (default: the engine's)" },
  'model-dir': { type: 'string', usage: '--model-dir DIR', description: 'with --speculation: serve this `conveyor convert` output (a trained model) instead of the bench decoder' },
  copier: {
    type: 'boolean',
    usage: '--copier',
    description: 'with --speculation: serve the copier, a model whose written weights copy its context (make_copier.py; needs the Hugging Face reference venv), instead of the bench decoder',
  },
  'copier-draft': { type: 'boolean', usage: '--copier-draft', description: "with --copier: propose with the copier's two-layer draft (same tokenizer) instead of n-gram lookup" },
  draft: { type: 'string', usage: '--draft DIR', description: 'with --speculation: propose with this draft model (a `conveyor convert` output sharing the tokenizer) instead of n-gram lookup' },
  'no-profile': { type: 'boolean', usage: '--no-profile', description: 'skip the decode step profile' },
};

const SIZES: readonly ModelSize[] = ['tiny', 'bench'];

export function engineBenchConfig(flags: FlagValues, quick: boolean): EngineBenchConfig {
  const size = stringList(flags['size'], SIZES, [quick ? 'tiny' : 'bench'], '--size');
  if (size.length !== 1) throw new Error('--size takes one size');
  const precisions: WeightPrecision[] = [...new Set(stringList<WeightPrecision>(flags['precision'], DECODER_PRECISIONS, ['fp32'], '--precision'))];
  if (precisions.length > 1 && flags['sweep-only'] !== true) throw new Error('--precision takes several variants only with --sweep --sweep-only');
  const concurrency = intList(flags['concurrency'], quick ? [1, 4, 8] : [1, 8, 32], '--concurrency');
  const promptTokens = positiveInt(flags['prompt'], quick ? 16 : 128, '--prompt', 1);
  const outputTokens = positiveInt(flags['output'], quick ? 8 : 128, '--output', 2);
  const prefixTokens = positiveInt(flags['prefix'], quick ? 64 : 1000, '--prefix', 16);
  const mixedRequests = positiveInt(flags['mixed'], quick ? 8 : 16, '--mixed', 1);
  const mixedPrompt: [number, number] = quick ? [4, 48] : [32, 384];
  const mixedOutput: [number, number] = quick ? [2, 16] : [16, 160];
  const sweep = intList(flags['sweep'], [], '--sweep');
  if (flags['sweep-only'] === true && sweep.length === 0) throw new Error('--sweep-only needs --sweep');
  const longest = Math.max(promptTokens + outputTokens, ...sweep.map((p) => p + outputTokens), prefixTokens + 64, mixedPrompt[1] + mixedOutput[1]);
  return {
    size: size[0]!,
    precision: precisions[0]!,
    precisions,
    threads: positiveInt(flags['threads'], availableParallelism(), '--threads', 1),
    concurrency,
    promptTokens,
    outputTokens,
    floorSteps: quick ? 2 : 10,
    prefixTokens,
    suffixTokens: quick ? 8 : 24,
    ttftRequests: quick ? 2 : 3,
    mixedRequests,
    mixedPrompt,
    mixedOutput,
    // The model's context (max_position_embeddings of both builds): what a contiguous cache reserves.
    maxModelLen: Math.max(4096, longest),
    maxNumBatchedTokens: quick ? 256 : 2048,
    blockSize: 16,
    // The bench decoder stores 8 KiB of K/V per token: 512 MiB holds 64k tokens, so no run
    // preempts (the cache is allocated lazily; untouched pages cost nothing); a context sweep's
    // longest point gets what it needs on top, so it measures attention, not preemption.
    kvCacheBytes: Math.max((quick ? 64 : 512) << 20, sweepKvBytes(size[0]!, Math.max(...concurrency), sweep, outputTokens)),
    profile: flags['no-profile'] !== true,
    sweep,
    sweepOnly: flags['sweep-only'] === true,
    sweepRunners: stringList(flags['sweep-runners'], SWEEP_RUNNERS, SWEEP_RUNNERS, '--sweep-runners'),
    speculation: flags['speculation'] === true,
    speculativeTokens: positiveInt(flags['spec-tokens'], 4, '--spec-tokens', 1),
    disableByBatchSize: flags['disable-by-batch-size'] === undefined ? null : positiveInt(flags['disable-by-batch-size'], 1, '--disable-by-batch-size', 1),
    modelDir: typeof flags['model-dir'] === 'string' ? flags['model-dir'] : null,
    draftDir: typeof flags['draft'] === 'string' ? flags['draft'] : null,
    copier: flags['copier'] === true || flags['copier-draft'] === true,
    copierDraft: flags['copier-draft'] === true,
  };
}

/** KV bytes the sweep's largest point holds at once (fp32 K/V, every block full, 10% headroom for partial blocks). */
function sweepKvBytes(size: ModelSize, concurrency: number, sweep: readonly number[], outputTokens: number): number {
  if (sweep.length === 0) return 0;
  const c = DECODER_CONFIGS[size];
  const perToken = 2 * c.numLayers * c.numKvHeads * c.headDim * 4;
  return Math.ceil(1.1 * concurrency * (Math.max(...sweep) + outputTokens) * perToken);
}

/** Every engine of the run: the same settings except what a comparison varies. */
export function engineData(config: EngineBenchConfig, modelPath: string, overrides: Partial<EngineWorkerData>): EngineWorkerData {
  return {
    modelPath,
    device: 'cpu',
    intraOpNumThreads: config.threads,
    maxNumSeqs: Math.max(...config.concurrency, config.mixedRequests),
    maxNumBatchedTokens: config.maxNumBatchedTokens,
    maxModelLen: config.maxModelLen,
    blockSize: config.blockSize,
    kvCacheBytes: config.kvCacheBytes,
    enablePrefixCaching: true,
    ...overrides,
  };
}
