import { describe, expect, it } from 'vitest';
import { formatMs, markdownTable, resultsTable, summaryMarkdown } from '../../../bench/harness/markdown.js';
import { buildResults } from '../../../bench/harness/results.js';
import type { BenchCase, BenchReport } from '../../../bench/harness/types.js';

function benchCase(group: string, variant: string, point: string, batch: number): BenchCase {
  return { group, variant, point, params: { batch }, work: { count: batch, unit: 'tok' }, run: () => undefined };
}

const cases = [benchCase('qwen3', 'fp32', 'decode b8', 8), benchCase('qwen3', 'int8', 'decode b8', 8), benchCase('bert', 'int8', 'b1', 1)];
const samples = new Map<number, number[]>([
  [0, [40, 38, 42]],
  [1, [20, 22, 19]],
  [2, [5, 5, 5]],
]);

describe('buildResults', () => {
  it('computes throughput at the median and ratios only against the same group and point', () => {
    const [fp32, int8, bert] = buildResults(cases, samples, 'fp32');
    expect(fp32!.stats.median).toBe(40);
    expect(fp32!.throughput).toEqual({ perSecond: 200, unit: 'tok/s' }); // 8 tokens / 40 ms
    expect(fp32!.ratio).toBe(1);
    expect(int8!.ratio).toBe(0.5);
    expect(bert!.ratio).toBeUndefined(); // no bert fp32 ran
    expect(fp32!.id).toBe('qwen3 fp32 decode b8');
    expect('run' in fp32!).toBe(false);
  });

  it('leaves out cases without samples', () => {
    expect(buildResults(cases, new Map([[1, [3]]]), 'fp32').map((r) => r.id)).toEqual(['qwen3 int8 decode b8']);
  });
});

describe('markdown', () => {
  it('renders a table with alignment and escaped pipes', () => {
    expect(markdownTable(['a', 'b|c'], [['1', 'x|y']], ['left', 'right'])).toBe('| a | b\\|c |\n| --- | ---: |\n| 1 | x\\|y |');
  });

  it('formats ms to about three significant digits', () => {
    expect([formatMs(0.0834), formatMs(3.14444), formatMs(19.04), formatMs(124.83)]).toEqual(['0.083', '3.14', '19.04', '124.8']);
  });

  it('lists medians, throughput and ratios per case', () => {
    const table = resultsTable(buildResults(cases, samples, 'fp32'), 'fp32');
    const lines = table.split('\n');
    expect(lines[0]).toContain('Time vs fp32');
    expect(lines).toHaveLength(2 + 3);
    expect(lines[2]).toBe('| qwen3 | fp32 | decode b8 | 3 | 40.00 | 41.60 | 41.96 | 40.00 ± 2.00 | 38.00 | 200 tok/s | 1.00× |');
    expect(lines[3]).toContain('| 0.50× |');
    expect(lines[4]!.endsWith('|  |')).toBe(true);
  });

  it('puts the results table last in the summary, after skipped cases and notes', () => {
    const report: BenchReport = {
      scenario: 'forward',
      startedAt: '2025-01-02T03:04:05.000Z',
      durationS: 12.5,
      settings: { reps: 3, batches: [1, 8] },
      baseline: 'fp32',
      machine: { cpuModel: 'Test CPU', cores: 2, memoryGiB: 8, platform: 'linux', arch: 'x64', node: 'v20', onnxruntime: '1.30.0', gitCommit: 'abcdef1234567890', gitDirty: false },
      notes: ['a note'],
      cases: buildResults(cases, samples, 'fp32'),
      skipped: [{ group: 'resnet', variant: 'fp16', reason: 'no file' }],
    };
    const md = summaryMarkdown(report, [{ file: 'x.svg', title: 'X' }]);
    expect(md).toContain('Test CPU, 2 cores');
    expect(md).toContain('commit abcdef123456');
    expect(md).toContain('batches 1,8');
    expect(md).toContain('- resnet fp16: no file');
    expect(md).toContain('![X](x.svg)');
    expect(md.trimEnd().split('\n').at(-1)).toMatch(/^\| bert \| int8 \| b1 \|/);
  });
});
