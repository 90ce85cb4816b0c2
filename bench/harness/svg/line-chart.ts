// Line chart of numeric x against y (e.g. tokens/s against batch size). Batch sizes grow
// geometrically, so a log-2 x axis keeps 1, 8 and 32 apart; ticks then sit on the data's x values.

import { colorOf, escapeXml, formatTick, formatValue, legend, niceTicks, noDataMessage, round, svgDocument, yAxis, type Box } from './common.js';

export interface LineSeries {
  readonly name: string;
  readonly points: readonly (readonly [x: number, y: number])[];
}

export interface LineChartData {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly LineSeries[];
  readonly logX?: boolean;
}

const MARGIN = { left: 76, right: 32, bottom: 60 };
const PLOT = { width: 560, height: 300 };

export function renderLineChart(data: LineChartData): string {
  const width = MARGIN.left + PLOT.width + MARGIN.right;
  const key = legend(
    data.series.map((s) => s.name),
    MARGIN.left,
    52,
    PLOT.width,
  );
  const plot: Box = { left: MARGIN.left, top: 52 + key.height + 16, width: PLOT.width, height: PLOT.height };
  const height = plot.top + plot.height + MARGIN.bottom;
  const points = data.series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  const logX = data.logX === true && points.every(([x]) => x > 0);
  if (points.length === 0) return svgDocument(width, height, data.title, [...key.markup, noDataMessage(plot)]);

  const yTicks = niceTicks(Math.max(...points.map(([, y]) => y)) * 1.05);
  const yMax = yTicks[yTicks.length - 1]!;
  const xValues = [...new Set(points.map(([x]) => x))].sort((a, b) => a - b);
  const xTicks = logX ? xValues : niceTicks(xValues[xValues.length - 1]!);
  const toX = xScale(plot, logX, logX ? xValues : xTicks);
  const toY = (y: number): number => round(plot.top + plot.height - (y / yMax) * plot.height);

  const body = [...key.markup, ...yAxis(plot, yTicks, data.yLabel)];
  for (const tick of xTicks) {
    const x = toX(tick);
    body.push(`<line x1="${x}" y1="${plot.top + plot.height}" x2="${x}" y2="${plot.top + plot.height + 5}" stroke="#333333"/>`);
    body.push(`<text x="${x}" y="${plot.top + plot.height + 19}" text-anchor="middle" fill="#444444">${escapeXml(formatTick(tick))}</text>`);
  }
  body.push(`<text x="${plot.left + plot.width / 2}" y="${plot.top + plot.height + 44}" text-anchor="middle" fill="#222222">${escapeXml(data.xLabel)}</text>`);
  data.series.forEach((series, si) => body.push(...seriesMarkup(series, colorOf(si), toX, toY)));
  return svgDocument(width, height, data.title, body);
}

function xScale(plot: Box, logX: boolean, domain: readonly number[]): (x: number) => number {
  const pad = 24; // keep end points off the axes
  const lo = logX ? Math.log2(domain[0]!) : 0;
  const hi = logX ? Math.log2(domain[domain.length - 1]!) : domain[domain.length - 1]!;
  const span = hi - lo || 1;
  return (x) => round(plot.left + pad + (((logX ? Math.log2(x) : x) - lo) / span) * (plot.width - 2 * pad));
}

function seriesMarkup(series: LineSeries, color: string, toX: (x: number) => number, toY: (y: number) => number): string[] {
  const sorted = [...series.points].filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)).sort((a, b) => a[0] - b[0]);
  if (sorted.length === 0) return [];
  const path = sorted.map(([x, y]) => `${toX(x)},${toY(y)}`).join(' ');
  const out = [`<g class="series" data-series="${escapeXml(series.name)}">`];
  out.push(`<polyline points="${path}" fill="none" stroke="${color}" stroke-width="2"/>`);
  for (const [x, y] of sorted) {
    out.push(`<circle cx="${toX(x)}" cy="${toY(y)}" r="4" fill="${color}"><title>${escapeXml(`${series.name} · ${formatTick(x)}: ${formatValue(y)}`)}</title></circle>`);
  }
  out.push('</g>');
  return out;
}
