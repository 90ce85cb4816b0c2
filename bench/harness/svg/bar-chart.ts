// Grouped bar chart: one cluster per category (e.g. 'decode b8'), one bar per series (e.g. 'fp32'),
// values printed on the bars so the chart can be read without hovering.

import { colorOf, escapeXml, formatValue, legend, niceTicks, noDataMessage, round, svgDocument, textWidth, yAxis, type Box } from './common.js';

export interface BarChartData {
  readonly title: string;
  readonly yLabel: string;
  readonly categories: readonly string[];
  /** values[i] belongs to categories[i]; null where the series has no value there. */
  readonly series: readonly { readonly name: string; readonly values: readonly (number | null)[] }[];
}

const BAR_WIDTH = 36;
const CLUSTER_GAP = 32;
const MARGIN = { left: 76, right: 24, bottom: 56 };
const PLOT_HEIGHT = 300;

export function renderBarChart(data: BarChartData): string {
  const seriesCount = Math.max(1, data.series.length);
  const clusterWidth = seriesCount * BAR_WIDTH + CLUSTER_GAP;
  const widestLabel = Math.max(0, ...data.categories.map((c) => textWidth(c)));
  const plotWidth = Math.max(480, data.categories.length * Math.max(clusterWidth, widestLabel + 12));
  const width = MARGIN.left + plotWidth + MARGIN.right;
  const key = legend(
    data.series.map((s) => s.name),
    MARGIN.left,
    52,
    plotWidth,
  );
  const plot: Box = { left: MARGIN.left, top: 52 + key.height + 16, width: plotWidth, height: PLOT_HEIGHT };
  const height = plot.top + plot.height + MARGIN.bottom;

  const values = data.series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v)));
  if (values.length === 0) return svgDocument(width, height, data.title, [...key.markup, noDataMessage(plot)]);
  // Headroom above the tallest bar for its value label.
  const ticks = niceTicks(Math.max(...values) * 1.08);
  const yMax = ticks[ticks.length - 1]!;
  const body = [...key.markup, ...yAxis(plot, ticks, data.yLabel)];
  const slot = plotWidth / data.categories.length;

  data.categories.forEach((category, ci) => {
    const clusterLeft = plot.left + ci * slot + (slot - seriesCount * BAR_WIDTH) / 2;
    data.series.forEach((series, si) => {
      const value = series.values[ci];
      if (value === null || value === undefined || !Number.isFinite(value)) return;
      const h = round((value / yMax) * plot.height);
      const x = round(clusterLeft + si * BAR_WIDTH + 2);
      const y = round(plot.top + plot.height - h);
      const label = formatValue(value);
      body.push(
        `<g class="bar" data-series="${escapeXml(series.name)}" data-category="${escapeXml(category)}">` +
          `<title>${escapeXml(`${series.name} · ${category}: ${label}`)}</title>` +
          `<rect x="${x}" y="${y}" width="${BAR_WIDTH - 4}" height="${h}" fill="${colorOf(si)}"/>` +
          `<text x="${round(x + (BAR_WIDTH - 4) / 2)}" y="${round(y - 4)}" text-anchor="middle" font-size="10" fill="#333333">${escapeXml(label)}</text></g>`,
      );
    });
    const cx = round(plot.left + ci * slot + slot / 2);
    body.push(`<text x="${cx}" y="${plot.top + plot.height + 20}" text-anchor="middle" fill="#222222">${escapeXml(category)}</text>`);
  });
  return svgDocument(width, height, data.title, body);
}
