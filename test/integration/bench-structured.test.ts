// Smoke test of `npm run bench -- structured --quick`: the real CLI, a real engine worker on the
// tiny decoder and real GrammarEngines, into a temporary folder. It proves the scenario end to end
// (constrained and unconstrained runs observed, masks counted, compiles timed, files written), not
// the numbers.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport, CaseResult } from '../../bench/harness/types.js';
import { checkWellFormed } from '../unit/bench/xml.js';

const run = promisify(execFile);
const out = mkdtempSync(join(tmpdir(), 'bench-structured-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

// --quick: concurrency 1,4,8, prompts of 16 tokens, 16 output tokens, the first 6 schemas.
const CONCURRENCY = [1, 4, 8];
const OUTPUT = 16;
const SCHEMAS = 6;

describe('npm run bench -- structured --quick', () => {
  it('writes results.json, summary.md and both charts, with data for every case', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/cli.ts', 'structured', '--quick', '--out', out], { cwd: process.cwd(), maxBuffer: 16 * 2 ** 20 });
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
    const find = (group: string, variant: string, point: string): CaseResult => {
      const found = report.cases.find((c) => c.group === group && c.variant === variant && c.point === point);
      expect(found, `${group} ${variant} ${point} measured (skipped: ${JSON.stringify(report.skipped)})`).toBeDefined();
      expect(found!.samplesMs.length).toBeGreaterThan(0);
      return found!;
    };

    expect(report.skipped).toEqual([]);
    expect(report.settings).toMatchObject({ quick: true, size: 'tiny', concurrency: CONCURRENCY, outputTokens: OUTPUT, schemaCount: SCHEMAS });
    for (const c of CONCURRENCY) {
      const free = find('throughput', 'unconstrained', `c${c}`).metrics!;
      const constrained = find('throughput', 'json schema', `c${c}`).metrics!;
      expect(free).toMatchObject({ runs: 1, outputTokens: c * OUTPUT, masks: 0, maskedSteps: 0 });
      expect(constrained).toMatchObject({ runs: 1, outputTokens: c * OUTPUT });
      expect(free['tokPerSec']).toBeGreaterThan(0);
      expect(constrained['tokPerSec']).toBeGreaterThan(0);
      // Every output token of a constrained request was sampled under a mask, or tried unmasked and accepted by its grammar.
      const acceptedUnmasked = (constrained['tried'] as number) - (constrained['refused'] as number);
      expect((constrained['masks'] as number) + acceptedUnmasked).toBe(c * OUTPUT);
      expect(constrained['maskMsPerToken']).toBeGreaterThan(0);
      expect(constrained['maskMsPerStep']).toBeGreaterThan(0);
    }
    const cold = find('compile', 'cold', `${SCHEMAS} schemas`).metrics!;
    const cached = find('compile', 'cached', `${SCHEMAS} schemas`).metrics!;
    expect(cold).toMatchObject({ compiles: SCHEMAS, p50Ms: expect.any(Number), p99Ms: expect.any(Number), openMs: expect.any(Number) });
    expect(cached).toMatchObject({ compiles: SCHEMAS, p50Ms: expect.any(Number), p99Ms: expect.any(Number) });
    // A cache hit hands back the compiled grammar; the slowest hit is faster than the slowest compile.
    expect(cached['maxMs']).toBeLessThan(cold['maxMs'] as number);

    for (const file of ['structured-throughput.svg', 'structured-compile.svg']) checkWellFormed(readFileSync(join(out, file), 'utf8'));
    const line = readFileSync(join(out, 'structured-throughput.svg'), 'utf8');
    for (const series of ['unconstrained', 'json schema']) expect(line).toContain(`data-series="${series}"`);
    const summary = readFileSync(join(out, 'summary.md'), 'utf8');
    expect(summary).toContain('### Compile time over the schema set');
    expect(summary).toContain('### Targets');
    // The targets table is the last thing on stdout.
    const last = stdout.trimEnd().split('\n').at(-1)!;
    expect(last).toMatch(/^\| compile p99, cold .* \| (met|missed) \|$/);
  }, 120_000);
});
