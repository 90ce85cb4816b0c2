// Smoke test of `npm run bench -- infer --quick`: the real CLI starts the real server as a child
// process over the tiny models and sweeps it over HTTP and gRPC with windows far too short to
// mean anything. It proves the path end to end (repository, server, both load generators,
// statistics deltas, files), not the numbers.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport } from '../../bench/harness/types.js';
import type { PointMetrics } from '../../bench/scenarios/infer/metrics.js';
import { checkWellFormed } from '../unit/bench/xml.js';

const run = promisify(execFile);
const FAMILIES = ['bert', 'resnet'];
const PROTOCOLS = ['http', 'grpc'];
const VARIANTS = ['batched', 'unbatched'];
const CONCURRENCY = [1, 4]; // --quick

const out = mkdtempSync(join(tmpdir(), 'bench-infer-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('npm run bench -- infer --quick', () => {
  it('sweeps every model, protocol, variant and concurrency and writes the results', { timeout: 120_000 }, async () => {
    const args = ['--import', 'tsx', 'bench/cli.ts', 'infer', '--quick', '--warmup', '0', '--window', '0.4', '--ramp', '0.1', '--out', out];
    const { stdout } = await run(process.execPath, args, { cwd: process.cwd(), maxBuffer: 16 * 2 ** 20 });
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
    const summary = readFileSync(join(out, 'summary.md'), 'utf8');

    expect(report.skipped).toEqual([]);
    expect(report.settings).toMatchObject({ quick: true, size: 'tiny', concurrency: [1, 4] });
    expect(report.cases).toHaveLength(FAMILIES.length * PROTOCOLS.length * VARIANTS.length * CONCURRENCY.length);
    for (const family of FAMILIES) {
      for (const protocol of PROTOCOLS) {
        for (const concurrency of CONCURRENCY) {
          for (const variant of VARIANTS) checkPoint(report, family, protocol, variant, concurrency);
          expect(summary).toContain(`| ${family} | ${protocol} | ${concurrency} |`);
        }
      }
      for (const chart of ['throughput', 'p99']) {
        const svg = readFileSync(join(out, `${family}-${chart}.svg`), 'utf8');
        checkWellFormed(svg);
        for (const protocol of PROTOCOLS) for (const variant of VARIANTS) expect(svg).toContain(`data-series="${protocol} ${variant}"`);
      }
    }
    // The target needs concurrency 32, which --quick leaves out; the check says so, last.
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('_Concurrency 32 was not in the sweep, so the target was not checked._');
  });
});

function checkPoint(report: BenchReport, family: string, protocol: string, variant: string, concurrency: number): void {
  const id = `${family} ${protocol} ${variant} c${concurrency}`;
  const result = report.cases.find((c) => c.id === id);
  expect(result, `${id} measured`).toBeDefined();
  const m = result!.metrics as unknown as PointMetrics;
  expect(m.completed, id).toBeGreaterThan(0);
  expect(m.errors, `${id}: ${m.firstError}`).toBe(0);
  expect(m.throughput, id).toBeGreaterThan(0);
  expect(m.p50Ms, id).toBeGreaterThan(0);
  expect(m.p99Ms, id).toBeGreaterThanOrEqual(m.p90Ms);
  expect(m.p90Ms, id).toBeGreaterThanOrEqual(m.p50Ms);
  expect(m.server.requests, id).toBeGreaterThan(0);
  expect(m.server.executions, id).toBeGreaterThan(0);
  expect(m.server.batchComputeMs, id).toBeGreaterThan(0);
  expect(m.server.queueMs, id).toBeGreaterThanOrEqual(0);
  // No dynamic_batching: one request per execution, whatever the concurrency.
  if (variant === 'unbatched') expect(m.server.avgBatch, id).toBe(1);
  else expect(m.server.avgBatch, id).toBeGreaterThanOrEqual(1);
}
