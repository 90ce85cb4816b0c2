// Smoke test of `npm run bench -- infer --pipelines --quick`: the real CLI starts the real server
// on the default repository and sweeps its two ensembles against the same steps chained by the
// client, JSON and binary, with windows far too short to mean anything. It proves the path end
// to end (both ways answer, statistics, results.json, the summary table, the charts), not the numbers.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport } from '../../bench/harness/types.js';
import type { PointMetrics } from '../../bench/scenarios/infer/metrics.js';
import { ENCODINGS, PIPELINES, WAYS } from '../../bench/scenarios/infer/pipelines.js';
import { checkWellFormed } from '../unit/bench/xml.js';

const run = promisify(execFile);
const CONCURRENCY = [1, 4]; // --quick

const out = mkdtempSync(join(tmpdir(), 'bench-pipelines-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('npm run bench -- infer --pipelines --quick', () => {
  it('sweeps both pipelines in the server and chained by the client, JSON and binary', { timeout: 180_000 }, async () => {
    const args = ['--import', 'tsx', 'bench/cli.ts', 'infer', '--pipelines', '--quick', '--warmup', '0', '--window', '0.3', '--ramp', '0.1', '--out', out];
    await run(process.execPath, args, { cwd: process.cwd(), maxBuffer: 16 * 2 ** 20 });
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
    const summary = readFileSync(join(out, 'summary.md'), 'utf8');

    expect(report.skipped).toEqual([]);
    expect(report.settings).toMatchObject({ pipelines: true, concurrency: CONCURRENCY });
    expect(report.cases).toHaveLength(PIPELINES.length * ENCODINGS.length * WAYS.length * CONCURRENCY.length);
    for (const pipeline of PIPELINES) {
      for (const encoding of ENCODINGS) {
        for (const concurrency of CONCURRENCY) {
          for (const way of WAYS) {
            const id = `${pipeline} ${encoding} ${way} c${concurrency}`;
            const result = report.cases.find((c) => c.id === id);
            expect(result, `${id} measured`).toBeDefined();
            const m = result!.metrics as unknown as PointMetrics;
            expect(m.errors, `${id}: ${m.firstError}`).toBe(0);
            expect(m.completed, id).toBeGreaterThan(0);
            expect(m.p99Ms, id).toBeGreaterThan(0);
          }
          expect(summary).toMatch(new RegExp(`\\| ${pipeline} \\| ${encoding} \\| ${concurrency} \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+× \\|`));
        }
      }
      for (const chart of ['throughput', 'p99']) {
        const svg = readFileSync(join(out, `${pipeline}-${chart}.svg`), 'utf8');
        checkWellFormed(svg);
        for (const encoding of ENCODINGS) for (const way of WAYS) expect(svg).toContain(`data-series="${encoding} ${way}"`);
      }
    }
  });
});
