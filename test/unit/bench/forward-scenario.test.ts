import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runScenario } from '../../../bench/harness/run-scenario.js';
import { forwardScenario } from '../../../bench/scenarios/forward/scenario.js';
import type { BenchReport } from '../../../bench/harness/types.js';
import { TOY, toySource } from './toy-models.js';

const root = mkdtempSync(join(tmpdir(), 'bench-forward-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const flags = { size: 'tiny', precisions: 'fp32,int8', batches: '1,3', threads: '1' };
const quiet = { write: () => true, isTTY: false };

describe('forward scenario on toy graphs', () => {
  it('builds one case per shape from the session metadata and skips missing variants', async () => {
    const prepared = await forwardScenario(toySource(join(root, 'a'))).prepare({ flags, quick: true, log: () => {} });
    try {
      expect(prepared.cases.map((c) => `${c.group} ${c.variant} ${c.point}`)).toEqual([
        'qwen3 fp32 decode b1',
        'qwen3 fp32 decode b3',
        'qwen3 fp32 prefill 64',
        'bert fp32 b1',
        'bert fp32 b3',
        'resnet fp32 b1',
        'resnet fp32 b3',
      ]);
      expect(prepared.skipped.map((s) => `${s.group} ${s.variant}`)).toEqual(['qwen3 int8', 'bert int8', 'resnet int8']);
      expect(prepared.skipped[0]!.reason).toMatch(/no int8 file/);
      expect(prepared.notes[0]).toContain(`${TOY.layers} layers, ${TOY.kvHeads} KV heads × head_dim ${TOY.headDim}`);
      expect(prepared.notes[0]).toContain('num_logits_to_keep fed 1');
    } finally {
      await prepared.dispose();
    }
  });

  it('feeds a decode step past 32 with one new token per row, and a prefill with an empty past', async () => {
    const prepared = await forwardScenario(toySource(join(root, 'b'))).prepare({ flags: { ...flags, families: 'qwen3' }, quick: true, log: () => {} });
    try {
      const [decodeB1, decodeB3, prefill] = prepared.cases;
      const step = (await decodeB3!.run()) as Record<string, { dims: readonly number[] }>;
      expect(step['logits']!.dims).toEqual([3, 1, TOY.vocab]);
      expect(step['present.1.value']!.dims).toEqual([3, TOY.kvHeads, 33, TOY.headDim]);
      expect(decodeB1!.work).toEqual({ count: 1, unit: 'tok' });
      const first = (await prefill!.run()) as Record<string, { dims: readonly number[] }>;
      expect(first['logits']!.dims).toEqual([1, 1, TOY.vocab]); // num_logits_to_keep = 1
      expect(first['present.0.key']!.dims).toEqual([1, TOY.kvHeads, 64, TOY.headDim]);
      expect(prefill!.work).toEqual({ count: 64, unit: 'tok' });
    } finally {
      await prepared.dispose();
    }
  });

  it('runs end to end, reporting a family that fails to build as skipped', async () => {
    const out = join(root, 'out');
    const scenario = forwardScenario(toySource(join(root, 'c'), ['resnet']));
    const common = { reps: 2, warmup: 1, quick: true, out, baseline: 'fp32' };
    const result = await runScenario(scenario, { common, flags: { ...flags, precisions: 'fp32' }, stderr: quiet });
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
    expect(report.cases.map((c) => c.id)).toEqual(['qwen3 fp32 decode b1', 'qwen3 fp32 decode b3', 'qwen3 fp32 prefill 64', 'bert fp32 b1', 'bert fp32 b3']);
    expect(report.cases.every((c) => c.samplesMs.length === 2 && c.ratio === 1)).toBe(true);
    expect(report.skipped).toEqual([{ group: 'resnet', variant: 'fp32', reason: 'model did not build: the resnet toy is broken on purpose' }]);
    expect(result.files).toEqual(['results.json', 'summary.md', 'qwen3-ms.svg', 'qwen3-throughput.svg', 'bert-ms.svg', 'bert-throughput.svg', 'resnet-ms.svg', 'resnet-throughput.svg']);
    expect(readFileSync(join(out, 'qwen3-throughput.svg'), 'utf8')).toContain('data-series="fp32"');
  });
});
