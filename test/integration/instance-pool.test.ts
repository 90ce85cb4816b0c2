// Model instances are worker threads with one real onnxruntime session each.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { InstancePool } from '../../src/serving/instance-pool.js';
import type { Tensor } from '../../src/contracts/tensors.js';

const RESNET = join(DEFAULT_REPOSITORY, 'resnet-tiny', '1', 'model.onnx');
const BERT = join(DEFAULT_REPOSITORY, 'bert-tiny', '1', 'model.onnx');
const logs: string[] = [];
const options = (modelPath: string, count = 1) => ({ modelPath, count, device: 'cpu' as const, intraOpNumThreads: 1, label: 'test', log: (l: string) => logs.push(l) });

function images(batch: number): Tensor {
  const data = new Float32Array(batch * 3 * 224 * 224).map((_, i) => Math.sin(i * 0.001));
  return { name: 'input', datatype: 'FP32', shape: [batch, 3, 224, 224], data };
}

describe('InstancePool', () => {
  const pools: InstancePool[] = [];
  afterAll(async () => Promise.all(pools.map((p) => p.close())));

  it('loads a model in a worker and reports its metadata', async () => {
    const pool = await InstancePool.start(options(BERT));
    pools.push(pool);
    expect(pool.metadata.inputs.map((i) => i.name)).toEqual(['input_ids', 'attention_mask', 'token_type_ids']);
    expect(pool.metadata.outputs[1]).toEqual({ name: 'sentence_embedding', type: 'float32', shape: ['batch_size', 32] });
    expect(pool.device).toBe('cpu');
  });

  it('runs batches on free instances, in parallel across instances, with timings', async () => {
    const pool = await InstancePool.start(options(RESNET, 2));
    pools.push(pool);
    expect(pool.freeInstances).toBe(2);
    const freed: number[] = [];
    pool.onInstanceFree(() => freed.push(pool.freeInstances));
    const [a, b] = [pool.execute([images(2)], ['logits']), pool.execute([images(1)], ['logits'])];
    expect(pool.freeInstances).toBe(0);
    await expect(pool.execute([images(1)], ['logits'])).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.outputs[0]!.shape).toEqual([2, 1000]);
    expect(rb.outputs[0]!.shape).toEqual([1, 1000]);
    // Same image → same logits whichever instance ran it.
    expect(Array.from((ra.outputs[0]!.data as Float32Array).subarray(0, 1000))).toEqual(Array.from(rb.outputs[0]!.data as Float32Array));
    expect(ra.timings.computeInferNs).toBeGreaterThan(0);
    expect(freed).toHaveLength(2);
    expect(pool.freeInstances).toBe(2);
  });

  it('keeps the main thread responsive while a model runs', async () => {
    const TICKS = 12;
    const pool = await InstancePool.start(options(RESNET));
    pools.push(pool);
    // The batch is built before the clock starts: filling 1.2 M floats with Math.sin is main-thread
    // work the pool has nothing to do with (it blocked ~40 ms per call and failed CI once). Each
    // call gets a copy because execute transfers (detaches) its input buffers.
    const batch = images(8);
    const copy = (): Tensor => ({ ...batch, data: (batch.data as Float32Array).slice() });
    await pool.execute([copy()], ['logits']);
    const lags: number[] = [];
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      lags.push(now - last - 5);
      last = now;
    }, 5);
    // Executes until the timer has ticked a dozen times, not a fixed count of them: a fast forward
    // pass (≈ 8 ms here) left three executes only 3–5 ticks, too few for a median (CI failed on
    // it once). A pass run on this thread would still let at most one, late, tick through per
    // execute, so the loop ends either way and the median tells the two apart.
    const started = performance.now();
    let executes = 0;
    while (lags.length < TICKS && executes < 10 * TICKS) {
      await pool.execute([copy()], ['logits']);
      executes++;
    }
    const perExecuteMs = (performance.now() - started) / executes;
    clearInterval(timer);
    // Median, not max: on a loaded 2-core machine the OS may delay any single tick, but a
    // session.run on this thread would block nearly every tick for the whole forward pass. The
    // bound scales with the forward pass itself, which a loaded machine slows as much as the ticks.
    lags.sort((a, b) => a - b);
    expect(lags.length).toBeGreaterThanOrEqual(TICKS);
    expect(lags[Math.floor(lags.length / 2)]!).toBeLessThan(Math.max(20, perExecuteMs / 2));
  });

  it('turns a bad input into an error and keeps serving', async () => {
    const pool = await InstancePool.start(options(RESNET));
    pools.push(pool);
    const wrong: Tensor = { name: 'input', datatype: 'FP32', shape: [1, 3, 10, 10], data: new Float32Array(300) };
    await expect(pool.execute([wrong], ['logits'])).rejects.toMatchObject({ code: 'INTERNAL' });
    expect((await pool.execute([images(1)], ['logits'])).outputs[0]!.shape).toEqual([1, 1000]);
  });

  it('fails to start on a missing model, with the reason', async () => {
    await expect(InstancePool.start(options('/nonexistent/model.onnx'))).rejects.toThrow(/failed to load model/);
  });

  it('does not grow memory over repeated load and close', async () => {
    const cycle = async () => {
      const pool = await InstancePool.start(options(BERT));
      await pool.close();
    };
    for (let i = 0; i < 3; i++) await cycle();
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 8; i++) await cycle();
    const grownMb = (process.memoryUsage().rss - before) / 2 ** 20;
    expect(grownMb).toBeLessThan(64);
  });
});
