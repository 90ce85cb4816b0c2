// The NativePagedRunner on the real tiny decoder's segments, beside the PagedRunner on the paged
// graph they were cut from (same weights): the same plans — a mixed prefill step, then decode
// steps over shuffled blocks — give the same logits; with kv_cache_dtype fp16 the pool holds half
// the bytes per position (twice the blocks for the same budget) and the logits stay within float16
// rounding of the float32 cache's; with int8 (a float32 scale per row) it holds about a quarter
// of the bytes and the logits stay within int8 rounding. A plan naming a block outside the pool fails mid-step without
// touching the pool, and the runner goes on. Where the kernel is switched off, a segments directory opens the
// paged graph with the reason in the runner's note; fp16 or int8 KV on a graph is refused. Both
// runners' greedy heads pick exactly the argmax of the logits their execute() returns.

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ScheduledRequest, StepPlan } from '../../src/contracts/generate.js';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { openModelRunner } from '../../src/runners/create-runner.js';
import type { ModelRunner, RunnerOptions } from '../../src/runners/model-runner.js';
import { argmax } from '../../src/sampler/select.js';
import { relativeError } from '../support/onnx.js';

const ONNX = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx');
/** Relative logits error of an int8 cache against the float32 one on these plans: measured 2.5e-6 (float16 1e-7); the tiny random model's logits depend little on attention. */
const INT8_LOGITS_TOLERANCE = 1e-3;
const options = (modelPath: string, overrides: Partial<RunnerOptions> = {}): RunnerOptions => ({ modelPath, device: 'cpu', intraOpNumThreads: 1, kvCacheBytes: 4 << 20, blockSize: 4, ...overrides });

/** Three sequences over shuffled blocks: a 9-token prompt, a 3-token prompt and a 14-token one, then three decode steps. */
function plans(): StepPlan[] {
  const tables = [
    [7, 2, 11, 4, 9],
    [5, 13],
    [1, 8, 3, 12, 6, 0],
  ];
  const prompts = [
    [9707, 11, 1879, 0, 358, 1079, 264, 5458, 13],
    [151644, 872, 198],
    [785, 3974, 13876, 38835, 34208, 916, 6722, 315, 9625, 30, 3838, 374, 279, 40],
  ];
  const row = (s: number, tokenIds: number[], numComputedTokens: number): ScheduledRequest => ({
    requestId: `r${s}`,
    tokenIds,
    numComputedTokens,
    blockTable: tables[s]!,
    sample: true,
    isNew: numComputedTokens === 0,
  });
  const steps: StepPlan[] = [{ stepId: 0, scheduled: prompts.map((p, s) => row(s, p, 0)), numScheduledTokens: 26, releasedRequestIds: [], blocksToCopy: [] }];
  for (let d = 0; d < 3; d++) {
    steps.push({ stepId: d + 1, scheduled: prompts.map((p, s) => row(s, [100 + 7 * d + s], p.length + d)), numScheduledTokens: 3, releasedRequestIds: [], blocksToCopy: [] });
  }
  return steps;
}

async function logitsOf(runner: ModelRunner): Promise<Float32Array[]> {
  const rows: Float32Array[] = [];
  try {
    for (const plan of plans()) {
      const logits = await runner.execute(plan);
      for (const r of plan.scheduled) rows.push(Float32Array.from(logits.get(r.requestId)!));
    }
  } finally {
    await runner.release();
  }
  return rows;
}

/** Each planned row's token from the runner's greedy head, plan by plan. */
async function greedyTokensOf(runner: ModelRunner, sampleableVocab: number): Promise<number[]> {
  const tokens: number[] = [];
  try {
    expect(runner.executeGreedy).toBeDefined();
    for (const plan of plans()) {
      const picked = await runner.executeGreedy!(plan, sampleableVocab);
      for (const r of plan.scheduled) tokens.push(picked.get(r.requestId)?.at(-1) as number);
    }
  } finally {
    await runner.release();
  }
  return tokens;
}

const worst = (a: Float32Array[], b: Float32Array[]) => Math.max(...a.map((row, i) => relativeError(row, b[i]!)));

describe('NativePagedRunner', () => {
  it('computes the paged graph’s logits on the same plans, and with an fp16 cache stays within its rounding', async () => {
    const graph = await logitsOf(await openModelRunner(options(join(ONNX, 'model_paged.onnx'))));
    const nativeRunner = await openModelRunner(options(join(ONNX, 'model_paged.segments')));
    expect(nativeRunner.info.kind).toBe('paged-native');
    expect(nativeRunner.info.shape.kvType).toBe('float32');
    const blocks32 = nativeRunner.info.numBlocks;
    const native = await logitsOf(nativeRunner);
    expect(worst(native, graph)).toBeLessThan(1e-4);

    const halfRunner = await openModelRunner(options(join(ONNX, 'model_paged.segments'), { kvCacheDtype: 'fp16' }));
    expect(halfRunner.info.shape.kvType).toBe('float16');
    expect(halfRunner.info.numBlocks).toBe(2 * blocks32);
    const half = await logitsOf(halfRunner);
    const error = worst(half, native);
    expect(error).toBeGreaterThan(0); // the cache really is float16
    expect(error).toBeLessThan(2e-2);

    const int8Runner = await openModelRunner(options(join(ONNX, 'model_paged.segments'), { kvCacheDtype: 'int8' }));
    expect(int8Runner.info.shape.kvType).toBe('int8');
    // head_dim bytes and a 4-byte scale per row against 4 × head_dim.
    const { headDim } = int8Runner.info.shape;
    expect(int8Runner.info.numBlocks).toBeGreaterThanOrEqual(Math.floor(blocks32 * ((4 * headDim) / (headDim + 4))));
    expect(int8Runner.info.numBlocks).toBeLessThanOrEqual(Math.ceil((blocks32 + 1) * ((4 * headDim) / (headDim + 4))));
    const quarter = await logitsOf(int8Runner);
    const int8Error = worst(quarter, native);
    expect(int8Error).toBeGreaterThan(error); // the cache really is int8, coarser than float16
    expect(int8Error).toBeLessThan(INT8_LOGITS_TOLERANCE);
  }, 60_000);

  it.each(['model_paged.onnx', 'model_paged.segments'])(
    '%s: the greedy head picks the argmax of the logits execute() returns, below the sampleable bound, and leaves the same cache',
    async (file) => {
      const rows = await logitsOf(await openModelRunner(options(join(ONNX, file))));
      // The tokenizer's bound, and one that cuts off most of the vocabulary (the argmax must move below it).
      for (const bound of [151_669, 5_000]) {
        const expected = rows.map((row) => argmax(row, bound));
        expect(await greedyTokensOf(await openModelRunner(options(join(ONNX, file))), bound)).toEqual(expected);
      }
    },
    60_000,
  );

  it('a step whose plan names a block outside the pool fails before writing anything, and the runner goes on computing the same logits', async () => {
    const reference = await logitsOf(await openModelRunner(options(join(ONNX, 'model_paged.segments'))));
    const runner = await openModelRunner(options(join(ONNX, 'model_paged.segments')));
    const [first, ...rest] = plans();
    try {
      const bad: StepPlan = { ...first!, scheduled: first!.scheduled.map((r, s) => (s === 1 ? { ...r, blockTable: [runner.info.numBlocks] } : r)) };
      // Segment 0 has run; the kernel refuses layer 0's write, so no block of the pool changed.
      await expect(runner.execute(bad)).rejects.toThrow(/a block id is outside the pool/);
      const rows: Float32Array[] = [];
      for (const plan of [first!, ...rest]) {
        const logits = await runner.execute(plan);
        for (const r of plan.scheduled) rows.push(Float32Array.from(logits.get(r.requestId)!));
      }
      expect(worst(rows, reference)).toBe(0);
    } finally {
      await runner.release();
    }
  }, 60_000);

  it('a greedy step whose plan names a block outside the pool fails the same way, and the runner goes on picking the same tokens', async () => {
    const bound = 151_669;
    const reference = await greedyTokensOf(await openModelRunner(options(join(ONNX, 'model_paged.segments'))), bound);
    const runner = await openModelRunner(options(join(ONNX, 'model_paged.segments')));
    const [first, ...rest] = plans();
    try {
      const bad: StepPlan = { ...first!, scheduled: first!.scheduled.map((r, s) => (s === 2 ? { ...r, blockTable: [runner.info.numBlocks + 3] } : r)) };
      await expect(runner.executeGreedy!(bad, bound)).rejects.toThrow(/a block id is outside the pool/);
      const tokens: number[] = [];
      for (const plan of [first!, ...rest]) {
        const picked = await runner.executeGreedy!(plan, bound);
        for (const r of plan.scheduled) tokens.push(picked.get(r.requestId)?.at(-1) as number);
      }
      expect(tokens).toEqual(reference);
    } finally {
      await runner.release();
    }
  }, 60_000);

  it('an injected fault at a greedy step throws there, counted with the logits steps', async () => {
    const runner = await openModelRunner(options(join(ONNX, 'model_paged.segments'), { faultInjection: { action: 'throw', at: 'step', count: 2 } }));
    const [first, second] = plans();
    try {
      await runner.execute(first!);
      await expect(runner.executeGreedy!(second!, 151_669)).rejects.toThrow(/fault injection: throw at step 2/);
    } finally {
      await runner.release();
    }
  }, 60_000);

  it('refuses an fp16 or int8 cache on a graph, naming what it needs', async () => {
    await expect(openModelRunner(options(join(ONNX, 'model.onnx'), { kvCacheDtype: 'fp16' }))).rejects.toThrow(/kv_cache_dtype fp16 on a float32 model needs attention_backend paged/);
    await expect(openModelRunner(options(join(ONNX, 'model_paged.onnx'), { kvCacheDtype: 'fp16' }))).rejects.toThrow(/native kernel/);
    await expect(openModelRunner(options(join(ONNX, 'model.onnx'), { kvCacheDtype: 'int8' }))).rejects.toThrow(/kv_cache_dtype int8 on a float32 model needs attention_backend paged/);
    await expect(openModelRunner(options(join(ONNX, 'model_paged.onnx'), { kvCacheDtype: 'int8' }))).rejects.toThrow(/native kernel/);
  });

  it('opens the paged graph the segments were cut from where the kernel is switched off, saying why', () => {
    // The kernel is loaded once per thread: a fresh process with CONVEYOR_NATIVE_ATTENTION=0.
    const script = `import { openModelRunner } from './src/runners/create-runner.ts';
const r = await openModelRunner({ modelPath: ${JSON.stringify(join(ONNX, 'model_paged.segments'))}, device: 'cpu', intraOpNumThreads: 1, kvCacheBytes: 1 << 20, blockSize: 4 });
console.log(JSON.stringify({ kind: r.info.kind, note: r.info.note }));
await r.release();`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: process.cwd(),
      env: { ...process.env, CONVEYOR_NATIVE_ATTENTION: '0' },
      encoding: 'utf8',
    });
    expect(child.status, child.stderr).toBe(0);
    const info = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as { kind: string; note: string };
    expect(info.kind).toBe('paged');
    expect(info.note).toContain("native paged attention unavailable (CONVEYOR_NATIVE_ATTENTION=0); running the paged graph's ONNX attention");
  }, 60_000);
});
