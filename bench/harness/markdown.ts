// The human-readable summary: a Markdown table of medians and ratios, preceded by what ran, where
// and what was skipped. The table comes last so it is what a terminal shows at the bottom.

import type { BenchReport, CaseResult } from './types.js';

export type Align = 'left' | 'right';

export function markdownTable(headers: readonly string[], rows: readonly (readonly string[])[], align: readonly Align[] = []): string {
  const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const line = (cells: readonly string[]): string => `| ${cells.map(cell).join(' | ')} |`;
  const rule = headers.map((_, i) => (align[i] === 'right' ? '---:' : '---'));
  return [line(headers), `| ${rule.join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** Milliseconds with about three significant digits, never in exponent form. */
export function formatMs(ms: number): string {
  if (ms >= 100) return ms.toFixed(1);
  if (ms >= 1) return ms.toFixed(2);
  return ms.toFixed(3);
}

export function formatRate(perSecond: number): string {
  if (perSecond >= 100) return Math.round(perSecond).toLocaleString('en-US');
  if (perSecond >= 10) return perSecond.toFixed(1);
  return perSecond.toFixed(2);
}

export function resultsTable(cases: readonly CaseResult[], baseline: string): string {
  const headers = ['Group', 'Variant', 'Case', 'n', 'Median ms', 'p90 ms', 'p99 ms', 'Mean ± sd ms', 'Min ms', 'Throughput', `Time vs ${baseline}`];
  const align: Align[] = ['left', 'left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'];
  const rows = cases.map((c) => [
    c.group,
    c.variant,
    c.point,
    String(c.stats.n),
    formatMs(c.stats.median),
    formatMs(c.stats.p90),
    formatMs(c.stats.p99),
    `${formatMs(c.stats.mean)} ± ${formatMs(c.stats.stddev)}`,
    formatMs(c.stats.min),
    c.throughput ? `${formatRate(c.throughput.perSecond)} ${c.throughput.unit}` : '',
    c.ratio === undefined ? '' : `${c.ratio.toFixed(2)}×`,
  ]);
  return markdownTable(headers, rows, align);
}

/** `results`: the scenario's own Markdown in place of the generic table (see PreparedScenario.conclude). */
export function summaryMarkdown(report: BenchReport, charts: readonly { file: string; title: string }[] = [], results?: string): string {
  const m = report.machine;
  const commit = `${m.gitCommit.slice(0, 12)}${m.gitDirty ? ' (uncommitted changes)' : ''}`;
  const settings = Object.entries(report.settings)
    .map(([key, value]) => `${key} ${Array.isArray(value) ? value.join(',') : String(value)}`)
    .join(', ');
  const lines = [
    `# Benchmark \`${report.scenario}\` — ${report.startedAt.slice(0, 10)}`,
    '',
    `- Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}/${m.arch}`,
    `- Software: Node ${m.node}, onnxruntime-node ${m.onnxruntime}, commit ${commit}`,
    `- Settings: ${settings}`,
    `- Cases ran interleaved (round-robin per repetition, warm-up excluded); times are wall ms per run.`,
    `- Time vs ${report.baseline}: median ÷ the \`${report.baseline}\` variant's median on the same group and case (below 1 is faster).`,
    `- Took ${report.durationS.toFixed(1)} s.`,
  ];
  if (report.notes.length > 0) lines.push('', '## Notes', '', ...report.notes.map((n) => `- ${n}`));
  if (report.skipped.length > 0) {
    lines.push('', '## Skipped', '');
    for (const s of report.skipped) lines.push(`- ${s.group} ${s.variant}${s.point ? ` ${s.point}` : ''}: ${s.reason}`);
  }
  if (charts.length > 0) lines.push('', '## Charts', '', ...charts.map((c) => `![${c.title}](${c.file})`));
  const table = report.cases.length > 0 ? resultsTable(report.cases, report.baseline) : '_No case produced a measurement._';
  lines.push('', '## Results', '', results ?? table);
  return `${lines.join('\n')}\n`;
}
