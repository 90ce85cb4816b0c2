import { describe, expect, it } from 'vitest';
import { renderChart } from '../../../bench/harness/charts.js';
import type { CaseResult } from '../../../bench/harness/types.js';
import { baselineDrift, baselineTokS, conversionLine, conversionTable, formatBytes, ratioToBaseline, servingTable, type ServingRecord } from '../../../bench/scenarios/families/report.js';

const record = (group: string, backend: string, concurrency: number, outputTokS: number, failed = 0): ServingRecord => ({ group, backend, concurrency, outputTokS, failed });

const serving: ServingRecord[] = [
  record('baseline-start', 'past_key_values', 1, 20),
  record('baseline-start', 'paged', 1, 30),
  record('llama', 'past_key_values', 1, 15),
  record('llama', 'paged', 1, 33, 1),
  record('gemma3', 'past_key_values', 1, 12),
  record('baseline-end', 'past_key_values', 1, 10),
  record('baseline-end', 'paged', 1, 30),
];

describe('families report', () => {
  it('divides by the mean of the baseline runs at the same backend and concurrency', () => {
    expect(baselineTokS(serving, 'past_key_values', 1)).toBe(15);
    expect(baselineTokS(serving, 'paged', 8)).toBeUndefined();
    expect(ratioToBaseline(serving, record('llama', 'past_key_values', 1, 15))).toBe(1);
    expect(ratioToBaseline(serving, record('llama', 'paged', 1, 33))).toBeCloseTo(1.1);
    expect(ratioToBaseline(serving, record('llama', 'paged', 8, 33))).toBeUndefined();
  });

  it('reports how far the baseline moved between its runs', () => {
    expect(baselineDrift(serving)).toEqual([
      { backend: 'past_key_values', concurrency: 1, spread: 1 },
      { backend: 'paged', concurrency: 1, spread: 0 },
    ]);
  });

  it('tabulates tok/s and ratios per family, with failures and missing points marked', () => {
    const lines = servingTable(serving).split('\n');
    expect(lines[0]).toBe('| Family | past_key_values c1 tok/s | × base | paged c1 tok/s | × base |');
    expect(lines[2]).toBe('| baseline-start | 20.0 | – | 30.0 | – |');
    expect(lines[3]).toBe('| llama | 15.0 | 1.00× | 33.0 (1 failed) | 1.10× |');
    expect(lines[4]).toBe('| gemma3 | 12.0 | 0.80× | – | – |');
  });

  it('puts peak RSS against the checkpoint size', () => {
    const table = conversionTable([
      { family: 'llama', variant: 'fp32 --paged', checkpointBytes: 2 ** 30, parameters: 178_135_552, outputBytes: 2 * 2 ** 30, wallS: 7.66, peakRssBytes: 1.5 * 2 ** 30 },
      { family: 'qwen3', variant: 'q4 --paged', checkpointBytes: 200 * 2 ** 20, parameters: undefined, outputBytes: 10 * 2 ** 20, wallS: 3, peakRssBytes: null },
    ]);
    expect(table.split('\n')[2]).toBe('| llama | fp32 --paged | 178.1 M | 1.00 GiB | 2.00 GiB | 7.7 | 1.50 GiB | 1.50× |');
    expect(table.split('\n')[3]).toBe('| qwen3 | q4 --paged | – | 200 MiB | 10 MiB | 3.0 | – | – |');
    expect(formatBytes(512 * 2 ** 20)).toBe('512 MiB');
    const line = conversionLine({ family: 'gemma3', variant: 'q4 --paged', checkpointBytes: 2 ** 20, parameters: 1, outputBytes: 2 ** 21, wallS: 1.25, peakRssBytes: null });
    expect(line).toBe('gemma3 q4 --paged: 1.3 s, peak RSS ?, checkpoint 1 MiB (1048576 B), written 2 MiB');
  });

  it('draws bars by a category other than the point when asked', () => {
    const result = (group: string, point: string, value: number): CaseResult =>
      ({ id: `${group} paged ${point}`, group, variant: 'paged', point, params: {}, samplesMs: [1], stats: {} as CaseResult['stats'], metrics: { outputThroughput: value } }) as CaseResult;
    const svg = renderChart(
      {
        kind: 'bar',
        file: 'x.svg',
        title: 't',
        yLabel: 'tok/s',
        select: () => true,
        seriesOf: (r) => `${r.variant} ${r.point}`,
        categoryOf: (r) => r.group,
        value: (r) => (r.metrics as { outputThroughput: number }).outputThroughput,
      },
      [result('llama', 'c1', 10), result('gemma3', 'c1', 20), result('llama', 'c8', 40)],
    );
    expect(svg).toContain('llama');
    expect(svg).toContain('gemma3');
    expect(svg).toContain('paged c8');
  });
});
