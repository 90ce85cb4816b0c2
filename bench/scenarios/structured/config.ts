// Settings of `npm run bench -- structured`: the throughput workload (the same requests with and
// without a JSON-schema constraint), the schema set compiled cold and cached, and the flags that
// change them. Full mode runs the bench decoder; --quick the tiny one with small shapes.

import { availableParallelism } from 'node:os';
import type { ModelSize } from '../../../models/common/model-files.js';
import type { EngineWorkerData } from '../../../src/contracts/engine-messages.js';
import { intList, positiveInt, stringList } from '../../harness/args.js';
import type { FlagSpec, FlagValues } from '../../harness/scenario.js';
import { SCHEMAS } from './schemas.js';

export interface StructuredBenchConfig {
  readonly size: ModelSize;
  readonly threads: number;
  /** Concurrent requests of the throughput points; the engine's maxNumSeqs is the largest. */
  readonly concurrency: readonly number[];
  readonly promptTokens: number;
  readonly outputTokens: number;
  /** How many schemas of the set (schemas.ts, in order) the compile cases compile per run. */
  readonly schemaCount: number;
  readonly maxNumBatchedTokens: number;
  readonly kvCacheBytes: number;
}

export const STRUCTURED_FLAGS: Readonly<Record<string, FlagSpec>> = {
  size: { type: 'string', usage: '--size tiny|bench', description: 'decoder to run (default bench; quick tiny)' },
  threads: { type: 'string', usage: '--threads N', description: 'intraOpNumThreads of the engine (default: number of cores)' },
  concurrency: { type: 'string', usage: '--concurrency 1,8,32', description: 'concurrent requests per throughput point (quick 1,4,8)' },
  prompt: { type: 'string', usage: '--prompt N', description: 'prompt tokens per throughput request (default 128; quick 16)' },
  output: { type: 'string', usage: '--output N', description: 'output tokens per throughput request (default 128; quick 16)' },
  schemas: { type: 'string', usage: '--schemas N', description: `schemas of the set compiled per compile run (default all ${SCHEMAS.length}; quick 6)` },
};

const SIZES: readonly ModelSize[] = ['tiny', 'bench'];

export function structuredBenchConfig(flags: FlagValues, quick: boolean): StructuredBenchConfig {
  const size = stringList(flags['size'], SIZES, [quick ? 'tiny' : 'bench'], '--size');
  if (size.length !== 1) throw new Error('--size takes one size');
  const schemaCount = positiveInt(flags['schemas'], quick ? 6 : SCHEMAS.length, '--schemas', 1);
  if (schemaCount > SCHEMAS.length) throw new Error(`--schemas: the set has ${SCHEMAS.length} schemas`);
  return {
    size: size[0]!,
    threads: positiveInt(flags['threads'], availableParallelism(), '--threads', 1),
    concurrency: intList(flags['concurrency'], quick ? [1, 4, 8] : [1, 8, 32], '--concurrency'),
    promptTokens: positiveInt(flags['prompt'], quick ? 16 : 128, '--prompt', 1),
    outputTokens: positiveInt(flags['output'], quick ? 16 : 128, '--output', 2),
    schemaCount,
    maxNumBatchedTokens: quick ? 256 : 2048,
    // The bench decoder stores 8 KiB of K/V per token: 512 MiB holds 64k tokens, so no run preempts.
    kvCacheBytes: (quick ? 64 : 512) << 20,
  };
}

/** The one engine both variants run on: constrained and unconstrained requests differ only in their grammar. */
export function engineData(config: StructuredBenchConfig, modelPath: string, tokenizerPath: string): EngineWorkerData {
  return {
    modelPath,
    device: 'cpu',
    intraOpNumThreads: config.threads,
    maxNumSeqs: Math.max(...config.concurrency),
    maxNumBatchedTokens: config.maxNumBatchedTokens,
    maxModelLen: Math.max(4096, config.promptTokens + config.outputTokens),
    blockSize: 16,
    kvCacheBytes: config.kvCacheBytes,
    // Off: both variants of a point send the same prompts, and the second must not skip their prefill.
    enablePrefixCaching: false,
    tokenizerPath,
  };
}
