// One decode step of the bench decoder at batch 32 on each paged runner, outside the engine (no
// scheduler, sampler or arrivals): the same plan — every sequence `past` positions into shuffled
// blocks — executed repeatedly on the paged graph (PagedRunner), the segmented decoder with the
// native kernel (NativePagedRunner) and the same with a float16 cache, with each step's time by
// phase from the runner's own counters. Says what a step costs where the engine sweep's numbers
// mix in everything else. Each sequence's past is first written by a real prefill step through
// the runner: a pool left as allocated is untouched pages that all map the kernel's one zero page,
// which the kernel then reads from cache (the first version of this tool did, and reported a
// third of the attention time a served step has at 2,048).
// Run: [VARIANTS=Native,int8] npx tsx bench/kernels/measure-decode-step.ts [past=128] [steps=8]   (needs `npm run bench -- engine` to have built models/build/qwen3-bench)

import { join } from 'node:path';
import { SeededRandom } from '../../kernels/onnx/random.js';
import type { StepPlan } from '../../src/contracts/generate.js';
import { openModelRunner } from '../../src/runners/create-runner.js';

const ONNX = join(import.meta.dirname, '..', '..', 'models', 'build', 'qwen3-bench', 'onnx');
const PAST = Number(process.argv[2] ?? 128);
const STEPS = Number(process.argv[3] ?? 8);
const [BATCH, BLOCK, WARMUP] = [32, 16, 3];
const perSequence = Math.ceil((PAST + 1) / BLOCK);

const VARIANTS = [
  { name: 'PagedRunner (graph)', file: 'model_paged.onnx', options: {} },
  { name: 'NativePagedRunner', file: 'model_paged.segments', options: {} },
  { name: 'NativePagedRunner fp16 KV', file: 'model_paged.segments', options: { kvCacheDtype: 'fp16' as const } },
  { name: 'NativePagedRunner int8 KV', file: 'model_paged.segments', options: { kvCacheDtype: 'int8' as const } },
].filter((v) => !process.env['VARIANTS'] || process.env['VARIANTS'].split(',').some((wanted) => v.name.includes(wanted)));

const random = new SeededRandom(7);
const order = Array.from({ length: BATCH * perSequence }, (_, i) => i);
for (let i = order.length - 1; i > 0; i--) {
  const j = random.nextUint32() % (i + 1);
  [order[i], order[j]] = [order[j]!, order[i]!];
}
const plan: StepPlan = {
  stepId: 0,
  numScheduledTokens: BATCH,
  releasedRequestIds: [],
  blocksToCopy: [],
  scheduled: Array.from({ length: BATCH }, (_, s) => ({
    requestId: `r${s}`,
    tokenIds: [100 + s],
    numComputedTokens: PAST,
    blockTable: order.slice(s * perSequence, (s + 1) * perSequence),
    sample: true,
    isNew: false,
  })),
};

/** One prefill step per sequence, writing its PAST positions into its blocks. */
const prefills: StepPlan[] = plan.scheduled.map((r) => ({
  stepId: 0,
  numScheduledTokens: PAST,
  releasedRequestIds: [],
  blocksToCopy: [],
  scheduled: [{ ...r, tokenIds: Array.from({ length: PAST }, () => 100 + (random.nextUint32() % 30_000)), numComputedTokens: 0, sample: false, isNew: true }],
}));

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`decode step, batch ${BATCH}, past ${PAST}, block ${BLOCK}, 2 threads: median of ${STEPS} after ${WARMUP} warm-up steps`);
for (const { name, file, options } of VARIANTS) {
  const runner = await openModelRunner({ modelPath: join(ONNX, file), device: 'cpu', intraOpNumThreads: 2, kvCacheBytes: 1200 << 20, blockSize: BLOCK, ...options });
  const step: number[] = [];
  const ort: number[] = [];
  const attention: number[] = [];
  try {
    for (const prefill of prefills) await runner.execute(prefill);
    for (let i = 0; i < WARMUP + STEPS; i++) {
      const started = performance.now();
      await runner.execute(plan);
      if (i < WARMUP) continue;
      step.push(performance.now() - started);
      ort.push(runner.stats.lastStep.ortMs);
      attention.push(runner.stats.lastStep.attentionMs);
    }
  } finally {
    await runner.release();
  }
  console.log(
    `  ${name.padEnd(28)} step ${median(step).toFixed(1).padStart(6)} ms   ORT ${median(ort).toFixed(1).padStart(6)} ms   kernel ${median(attention).toFixed(1).padStart(5)} ms   (${runner.info.kind}, ${runner.info.numBlocks} blocks)`,
  );
}
