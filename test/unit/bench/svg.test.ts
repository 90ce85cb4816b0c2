import { describe, expect, it } from 'vitest';
import { escapeXml, formatValue, niceTicks } from '../../../bench/harness/svg/common.js';
import { renderBarChart } from '../../../bench/harness/svg/bar-chart.js';
import { renderLineChart } from '../../../bench/harness/svg/line-chart.js';
import { checkWellFormed, textContent } from './xml.js';

describe('chart helpers', () => {
  it('picks 1-2-5 tick steps that cover the maximum', () => {
    expect(niceTicks(124.8)).toEqual([0, 50, 100, 150]);
    expect(niceTicks(10)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(niceTicks(0.37)).toEqual([0, 0.1, 0.2, 0.3, 0.4]);
    expect(niceTicks(0)).toEqual([0, 1]);
  });

  it('formats about three significant digits and escapes markup', () => {
    expect([formatValue(0.0123), formatValue(3.176), formatValue(19.04), formatValue(1234.5)]).toEqual(['0.0123', '3.18', '19.0', '1,235']);
    expect(escapeXml(`a<b & "c"`)).toBe('a&lt;b &amp; &quot;c&quot;');
  });

  it('the well-formedness checker itself rejects broken markup', () => {
    expect(() => checkWellFormed('<svg><g></svg>')).toThrow();
    expect(() => checkWellFormed('<svg><text>a < b</text></svg>')).toThrow();
    expect(() => checkWellFormed('<svg><text>a & b</text></svg>')).toThrow();
    expect(() => checkWellFormed('<svg x=1></svg>')).toThrow();
  });
});

describe('renderBarChart', () => {
  const data = {
    title: 'Forward <ms> & more',
    yLabel: 'ms per run',
    categories: ['decode b1', 'decode b8', 'prefill 512'],
    series: [
      { name: 'fp32', values: [19.0, 36.2, 480] },
      { name: 'int8', values: [12.5, null, 300] },
    ],
  };

  it('is well-formed SVG naming every series, category and value', () => {
    const svg = renderBarChart(data);
    expect(checkWellFormed(svg).root).toBe('svg');
    const text = textContent(svg);
    for (const name of ['fp32', 'int8', 'decode b1', 'decode b8', 'prefill 512', 'ms per run', 'Forward <ms> & more', '19.0', '480']) {
      expect(text).toContain(name);
    }
    expect(svg.match(/<rect [^>]*fill="#/g)?.length).toBe(1 + 2 + 5); // background, legend, bars (one value missing)
  });

  it('draws taller bars for larger values', () => {
    const heights = [...renderBarChart(data).matchAll(/data-series="fp32"[^>]*><title>[^<]*<\/title><rect [^>]*height="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(heights).toHaveLength(3);
    expect(heights[0]!).toBeLessThan(heights[1]!);
    expect(heights[1]!).toBeLessThan(heights[2]!);
  });

  it('says there is no data instead of failing on an empty chart', () => {
    const svg = renderBarChart({ title: 'empty', yLabel: 'ms', categories: [], series: [] });
    checkWellFormed(svg);
    expect(svg).toContain('no data');
  });
});

describe('renderLineChart', () => {
  const data = {
    title: 'tokens/s vs batch',
    xLabel: 'batch size',
    yLabel: 'tokens/s',
    logX: true,
    series: [
      {
        name: 'qwen3 fp32',
        points: [
          [1, 52.7],
          [8, 221],
          [32, 256],
        ] as [number, number][],
      },
      {
        name: 'qwen3 int8',
        points: [
          [1, 80],
          [8, 300],
          [32, 410],
        ] as [number, number][],
      },
    ],
  };

  it('is well-formed SVG with a polyline and labelled points per series', () => {
    const svg = renderLineChart(data);
    checkWellFormed(svg);
    const text = textContent(svg);
    for (const name of ['qwen3 fp32', 'qwen3 int8', 'batch size', 'tokens/s', '32']) expect(text).toContain(name);
    expect(svg.match(/<polyline /g)).toHaveLength(2);
    expect(svg.match(/<circle /g)).toHaveLength(6);
  });

  it('spaces batch sizes 1, 8, 32 evenly in log2 and rises with throughput', () => {
    const svg = renderLineChart({ ...data, series: [data.series[0]!] });
    const points = [...svg.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)"/g)].map((m) => [Number(m[1]), Number(m[2])] as const);
    const [a, b, c] = points.map(([x]) => x);
    expect((b! - a!) / (c! - b!)).toBeCloseTo(3 / 2, 1); // log2: 0 → 3 → 5
    expect(points[0]![1]).toBeGreaterThan(points[2]![1]); // higher y value is higher up (smaller cy)
  });
});
