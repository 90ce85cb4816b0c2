// Smoke test of `npm run bench -- engine --quick`: the real CLI, four real engine workers and the
// tiny decoder, into a temporary folder. It proves the scenario end to end (engines started,
// every case run and observed, metrics derived, files written), not the numbers.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport, CaseResult } from '../../bench/harness/types.js';
import { checkWellFormed } from '../unit/bench/xml.js';

const run = promisify(execFile);
const out = mkdtempSync(join(tmpdir(), 'bench-engine-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

// --quick: concurrency 1,4,8, prompts of 16 tokens, 8 output tokens, a 64-token shared prefix.
const CONCURRENCY = [1, 4, 8];
const OUTPUT = 8;
const PREFIX = 64;

describe('npm run bench -- engine --quick', () => {
  it('writes results.json, summary.md and both charts, with data for every case', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/cli.ts', 'engine', '--quick', '--out', out], {
      cwd: process.cwd(),
      maxBuffer: 16 * 2 ** 20,
    });
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
    const summary = readFileSync(join(out, 'summary.md'), 'utf8');
    const find = (group: string, variant: string, point: string): CaseResult => {
      const found = report.cases.find((c) => c.group === group && c.variant === variant && c.point === point);
      expect(found, `${group} ${variant} ${point} measured (skipped: ${JSON.stringify(report.skipped)})`).toBeDefined();
      expect(found!.samplesMs.length).toBeGreaterThan(0);
      return found!;
    };

    expect(report.skipped).toEqual([]);
    expect(report.settings).toMatchObject({ quick: true, size: 'tiny', concurrency: CONCURRENCY, outputTokens: OUTPUT, prefixTokens: PREFIX });
    for (const c of CONCURRENCY) {
      for (const variant of ['batched', 'max_num_seqs=1']) {
        const result = find('throughput', variant, `c${c}`);
        expect(result.throughput!.perSecond).toBeGreaterThan(0);
        expect(result.metrics).toMatchObject({ outputTokens: c * OUTPUT });
        expect(result.metrics!['decodeStepMs']).toBeGreaterThan(0);
      }
      expect(find('forward', 'forward floor', `decode b${c}`).metrics).toMatchObject({ calls: 2, stepMs: expect.any(Number), tokPerSec: expect.any(Number) });
      expect(find('forward', 'forward floor', `prefill ${c}×16`).metrics!['tokPerSec']).toBeGreaterThan(0);
    }
    const on = find('ttft', 'prefix cache on', `prefix ${PREFIX}`).metrics!;
    const off = find('ttft', 'prefix cache off', `prefix ${PREFIX}`).metrics!;
    expect(on['cachedTokens']).toBe(PREFIX); // 64 = 4 full blocks of the shared prefix
    expect(off['cachedTokens']).toBe(0);
    expect(on['ttftMs']).toBeGreaterThan(0);
    expect(off['ttftMs']).toBeGreaterThan(0);
    const kv = find('kv', 'batched', 'mixed 8').metrics!;
    expect(kv['samples']).toBeGreaterThan(0);
    expect(kv['agreeing']).toBe(kv['samples']); // the engine's block count is Σ ceil(stored / 16) at every sample
    expect(kv['pagedWaste']).toBeLessThan(kv['maxModelLenWaste'] as number);

    for (const file of ['engine-throughput.svg', 'engine-ttft.svg']) checkWellFormed(readFileSync(join(out, file), 'utf8'));
    const line = readFileSync(join(out, 'engine-throughput.svg'), 'utf8');
    for (const series of ['batched', 'max_num_seqs=1', 'forward floor']) expect(line).toContain(`data-series="${series}"`);
    expect(summary).toContain('![qwen3 tiny: output tokens/s');
    expect(summary).toContain('### Targets');
    // The targets table is the last thing on stdout.
    const last = stdout.trimEnd().split('\n').at(-1)!;
    expect(last).toMatch(/^\| KV waste of the paged cache .* \| (met|missed) \|$/);
  }, 120_000);
});
