// Writes a finished run: results.json (everything, raw samples included), summary.md and the
// charts, into bench/results/<YYYY-MM-DD>-<scenario>/ unless the caller chose a folder.

import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderChart, type ChartRequest } from './charts.js';
import { summaryMarkdown } from './markdown.js';
import type { BenchReport } from './types.js';

const RESULTS_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'results');

export function defaultResultsDir(scenario: string, startedAt: Date): string {
  // Local date: the folder name should match the day the person running it sees.
  const day = `${startedAt.getFullYear()}-${pad(startedAt.getMonth() + 1)}-${pad(startedAt.getDate())}`;
  return join(RESULTS_ROOT, `${day}-${scenario}`);
}

export interface WrittenFiles {
  readonly dir: string;
  readonly files: readonly string[];
  readonly summary: string;
}

export async function writeResults(dir: string, report: BenchReport, charts: readonly ChartRequest[], results?: string): Promise<WrittenFiles> {
  await mkdir(dir, { recursive: true });
  const summary = summaryMarkdown(report, charts, results);
  const files: [string, string][] = [
    ['results.json', `${JSON.stringify(report, null, 2)}\n`],
    ['summary.md', summary],
    ...charts.map((chart): [string, string] => [chart.file, renderChart(chart, report.cases)]),
  ];
  for (const [name, text] of files) await writeFile(join(dir, name), text);
  return { dir, files: files.map(([name]) => name), summary };
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}
