// Pieces both chart kinds share: escaping, "nice" axis ticks, number labels, the legend and the
// y axis. Charts are plain SVG strings so results need no plotting dependency to render on GitHub.

/** Okabe–Ito: distinguishable with the common colour-vision deficiencies. */
export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#F0E442', '#000000'];

export const FONT = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif";

export function colorOf(index: number): string {
  return PALETTE[index % PALETTE.length]!;
}

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/** Ticks from 0 to at least `max`, at 1, 2 or 5 × 10^k steps, about `target` of them. */
export function niceTicks(max: number, target = 5): number[] {
  if (!(max > 0) || !Number.isFinite(max)) return [0, 1];
  const raw = max / target;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / magnitude;
  const step = (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * magnitude;
  const ticks: number[] = [];
  for (let i = 0; i * step < max + step * 1e-9; i++) ticks.push(Number((i * step).toPrecision(12)));
  if (ticks[ticks.length - 1]! < max) ticks.push(Number((ticks.length * step).toPrecision(12)));
  return ticks;
}

/** About three significant digits, grouped thousands: 0.0123, 19.0, 125, 1,235. */
export function formatValue(value: number): string {
  const abs = Math.abs(value);
  if (abs === 0) return '0';
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : Math.min(6, 2 - Math.floor(Math.log10(abs)));
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function formatTick(value: number): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: 6 });
}

/** Rough text width for layout; SVG cannot measure text, and labels only need to not collide. */
export function textWidth(text: string, fontSize = 12): number {
  return text.length * fontSize * 0.6;
}

export interface Box {
  readonly left: number;
  readonly top: number;
  readonly width: number;
  readonly height: number;
}

export function svgDocument(width: number, height: number, title: string, body: readonly string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="${escapeXml(FONT)}" font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="26" text-anchor="middle" font-size="16" font-weight="600" fill="#222222">${escapeXml(title)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

/** Legend laid out in rows under the title; returns the markup and the height it used. */
export function legend(names: readonly string[], left: number, top: number, maxWidth: number): { markup: string[]; height: number } {
  const markup: string[] = [];
  const rowHeight = 18;
  let x = left;
  let y = top;
  names.forEach((name, i) => {
    const itemWidth = 18 + textWidth(name) + 18;
    if (x > left && x + itemWidth > left + maxWidth) {
      x = left;
      y += rowHeight;
    }
    markup.push(`<g class="legend-item"><rect x="${x}" y="${y - 10}" width="12" height="12" fill="${colorOf(i)}"/>` + `<text x="${x + 17}" y="${y}" fill="#222222">${escapeXml(name)}</text></g>`);
    x += itemWidth;
  });
  return { markup, height: names.length > 0 ? y - top + rowHeight : 0 };
}

/** Horizontal grid lines with labelled ticks on the left, and the rotated axis title. */
export function yAxis(plot: Box, ticks: readonly number[], label: string): string[] {
  const max = ticks[ticks.length - 1]!;
  const out: string[] = [];
  for (const tick of ticks) {
    const y = round(plot.top + plot.height - (tick / max) * plot.height);
    out.push(`<line x1="${plot.left}" y1="${y}" x2="${plot.left + plot.width}" y2="${y}" stroke="${tick === 0 ? '#333333' : '#e3e3e3'}" stroke-width="1"/>`);
    out.push(`<text x="${plot.left - 8}" y="${y + 4}" text-anchor="end" fill="#444444">${escapeXml(formatTick(tick))}</text>`);
  }
  out.push(`<line x1="${plot.left}" y1="${plot.top}" x2="${plot.left}" y2="${plot.top + plot.height}" stroke="#333333" stroke-width="1"/>`);
  const cx = 18;
  const cy = round(plot.top + plot.height / 2);
  out.push(`<text x="${cx}" y="${cy}" text-anchor="middle" transform="rotate(-90 ${cx} ${cy})" fill="#222222">${escapeXml(label)}</text>`);
  return out;
}

export function noDataMessage(plot: Box): string {
  return `<text x="${plot.left + plot.width / 2}" y="${plot.top + plot.height / 2}" text-anchor="middle" fill="#888888">no data (see Skipped in summary.md)</text>`;
}

export function round(value: number): number {
  return Math.round(value * 10) / 10;
}
