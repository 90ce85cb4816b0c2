// Smoke test of `npm run bench -- precision --quick`, cut to the encoder's fp32 and int8 at
// concurrency 1 and 2: the real CLI serving the real tiny model through a child server, into a
// temporary folder. It proves the pipeline (repository, loads, memory, throughput cases, quality,
// the live swap under traffic, the report), not the numbers. q4 is asked for too: the encoder has
// no 4-bit build, so it is skipped with a note rather than failing the run.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport } from '../../bench/harness/types.js';
import { checkWellFormed } from '../unit/bench/xml.js';

const run = promisify(execFile);
const out = mkdtempSync(join(tmpdir(), 'bench-precision-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('npm run bench -- precision --quick', () => {
  it('writes throughput per variant and concurrency, memory and quality per variant, and the swap under traffic', async () => {
    const args = ['precision', '--quick', '--families', 'bert', '--precisions', 'fp32,int8,q4', '--concurrency', '1,2', '--out', out];
    await run(process.execPath, ['--import', 'tsx', 'bench/cli.ts', ...args], { cwd: process.cwd(), maxBuffer: 16 * 2 ** 20 });
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
    const summary = readFileSync(join(out, 'summary.md'), 'utf8');

    for (const variant of ['fp32', 'int8']) {
      for (const point of ['c1', 'c2']) {
        const result = report.cases.find((c) => c.group === 'bert' && c.variant === variant && c.point === point);
        expect(result, `bert ${variant} ${point}`).toBeDefined();
        expect(result!.throughput).toMatchObject({ unit: 'requests/s' });
        expect(result!.throughput!.perSecond).toBeGreaterThan(0);
      }
      // Throughput, then memory and quality, per variant.
      expect(summary).toMatch(new RegExp(`\\| bert \\| ${variant} \\| [\\d.]+ requests/s`));
      expect(summary).toMatch(new RegExp(`\\| bert \\| ${variant} \\| ${variant === 'fp32' ? 'model' : 'model_quantized'}\\.onnx, [\\d.]+ MiB \\| [\\d.]+ MiB \\| (-?[\\d.]+ MiB|n/a) \\|`));
    }
    expect(summary).toMatch(/\| bert \| int8 \|.*\| cosine min 0\.9\d+ over 3 texts \|/);
    // The swap goes through every variant and back to fp32, with no request failing.
    expect(summary).toMatch(/\| bert \| fp32 → int8 \| \d+ \| \d+ \|/);
    expect(summary).toMatch(/\| bert \| int8 → fp32 \| \d+ \| \d+ \|/);
    expect(summary).toContain('0 request(s) failed during the swaps');
    expect(summary).toContain('bert: no q4 variant is built for this family (4-bit weights are decoder-only), skipped');
    expect(report.cases.some((c) => c.variant === 'q4')).toBe(false);
    checkWellFormed(readFileSync(join(out, 'precision-throughput.svg'), 'utf8'));
  }, 600_000);
});
