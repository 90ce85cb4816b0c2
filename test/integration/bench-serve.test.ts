// Smoke test of `npm run bench -- serve --quick`: the real CLI starts Conveyor (batching on and
// off) and the naive server as child processes on the tiny decoder and sends each a handful of
// short streamed completions at concurrency 1 and 4. It proves the path end to end (servers, the
// OpenAI stream, the client's timing, metrics, files), not the numbers.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport } from '../../bench/harness/types.js';
import type { ServeMetrics } from '../../bench/scenarios/serve/metrics.js';
import { checkWellFormed } from '../unit/bench/xml.js';

const run = promisify(execFile);
const SYSTEMS = ['conveyor', 'conveyor-serial', 'naive'];
const CONCURRENCY = [1, 4]; // --quick
const PROMPTS = [2, 8]; // --quick: 2 × concurrency, at least 2
const OUTPUT_LEN = 8; // --quick
const CHARTS = ['throughput', 'ttft-median', 'ttft-p99', 'tpot-median', 'e2el-p99'];

const out = mkdtempSync(join(tmpdir(), 'bench-serve-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('npm run bench -- serve --quick', () => {
  it('runs every system at every point and writes the results', { timeout: 120_000 }, async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/cli.ts', 'serve', '--quick', '--out', out], { cwd: process.cwd(), maxBuffer: 16 * 2 ** 20 });
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
    const summary = readFileSync(join(out, 'summary.md'), 'utf8');

    expect(report.skipped).toEqual([]);
    expect(report.settings).toMatchObject({ quick: true, size: 'tiny', concurrency: CONCURRENCY, outputLen: OUTPUT_LEN });
    expect(report.cases).toHaveLength(SYSTEMS.length * CONCURRENCY.length);
    CONCURRENCY.forEach((concurrency, i) => {
      for (const system of SYSTEMS) {
        checkPoint(report, system, concurrency, PROMPTS[i]!);
        expect(summary).toContain(`| ${concurrency} | ${system} |`);
      }
    });
    for (const chart of CHARTS) {
      const svg = readFileSync(join(out, `${chart}.svg`), 'utf8');
      checkWellFormed(svg);
      for (const system of SYSTEMS) expect(svg).toContain(`data-series="${system}"`);
    }
    // The target needs concurrency 32, which --quick leaves out; the check says so, last.
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('_Concurrency 32 was not in the sweep, so the target was not checked._');
  });
});

function checkPoint(report: BenchReport, system: string, concurrency: number, prompts: number): void {
  const id = `random in 16 out ${OUTPUT_LEN} ${system} c${concurrency}`;
  const result = report.cases.find((c) => c.id === id);
  expect(result, `${id} measured`).toBeDefined();
  const m = result!.metrics as unknown as ServeMetrics;
  expect(m.failed, `${id}: ${m.firstError}`).toBe(0);
  expect(m.completed, id).toBe(prompts);
  // ignore_eos: every request produced exactly max_tokens, as the usage chunk reported.
  expect(m.totalOutputTokens, id).toBe(prompts * OUTPUT_LEN);
  expect(m.totalInputTokens, id).toBe(prompts * 16);
  expect(m.outputThroughput, id).toBeGreaterThan(0);
  expect(m.ttftMs.n, id).toBe(prompts);
  expect(m.tpotMs.n, id).toBe(prompts);
  expect(m.itlMs.n, id).toBeGreaterThan(0);
  expect(m.e2elMs.p99, id).toBeGreaterThanOrEqual(m.e2elMs.median);
  expect(m.ttftMs.median, id).toBeGreaterThan(0);
  expect(m.maxConcurrentRequests, id).toBeLessThanOrEqual(concurrency);
  expect(m.maxConcurrentRequests, id).toBeGreaterThanOrEqual(1);
}
