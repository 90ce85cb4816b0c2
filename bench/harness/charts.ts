// Chart requests a scenario declares, turned into chart data from the finished results. Series are
// `group variant` (e.g. 'qwen3 fp32'); bar categories are the workload points.

import { renderBarChart } from './svg/bar-chart.js';
import { renderLineChart, type LineSeries } from './svg/line-chart.js';
import type { CaseResult } from './types.js';

interface ChartBase {
  /** File name inside the results folder, e.g. 'forward-ms.svg'. */
  readonly file: string;
  readonly title: string;
  readonly yLabel: string;
  readonly select: (result: CaseResult) => boolean;
  /** Series name of a result; defaults to `group variant`. */
  readonly seriesOf?: (result: CaseResult) => string;
}

export interface BarChartRequest extends ChartBase {
  readonly kind: 'bar';
  readonly value: (result: CaseResult) => number;
  /** Bar category of a result; defaults to its point. */
  readonly categoryOf?: (result: CaseResult) => string;
}

export interface LineChartRequest extends ChartBase {
  readonly kind: 'line';
  readonly xLabel: string;
  readonly x: (result: CaseResult) => number;
  readonly y: (result: CaseResult) => number;
  readonly logX?: boolean;
}

/** Lines read from the results themselves (e.g. metrics a load test sampled over time), named `series result-series`. */
export interface TimelineChartRequest extends ChartBase {
  readonly kind: 'timeline';
  readonly xLabel: string;
  readonly lines: (result: CaseResult) => readonly LineSeries[];
}

export type ChartRequest = BarChartRequest | LineChartRequest | TimelineChartRequest;

export function renderChart(request: ChartRequest, results: readonly CaseResult[]): string {
  const selected = results.filter(request.select);
  const seriesOf = request.seriesOf ?? ((r: CaseResult) => `${r.group} ${r.variant}`);
  const names = unique(selected.map(seriesOf));
  if (request.kind === 'bar') {
    const categoryOf = request.categoryOf ?? ((r: CaseResult) => r.point);
    const categories = unique(selected.map(categoryOf));
    const series = names.map((name) => ({
      name,
      values: categories.map((category) => {
        const hit = selected.find((r) => seriesOf(r) === name && categoryOf(r) === category);
        return hit ? request.value(hit) : null;
      }),
    }));
    return renderBarChart({ title: request.title, yLabel: request.yLabel, categories, series });
  }
  if (request.kind === 'timeline') {
    const series = selected.flatMap((r) => request.lines(r).map((line) => ({ name: `${seriesOf(r)} ${line.name}`, points: line.points })));
    return renderLineChart({ title: request.title, xLabel: request.xLabel, yLabel: request.yLabel, series, logX: false });
  }
  const series = names.map((name) => ({
    name,
    points: selected.filter((r) => seriesOf(r) === name).map((r) => [request.x(r), request.y(r)] as const),
  }));
  return renderLineChart({ title: request.title, xLabel: request.xLabel, yLabel: request.yLabel, series, logX: request.logX ?? false });
}

/** First-seen order, so series and categories follow the order cases were declared in. */
function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
