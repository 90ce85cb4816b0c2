// Smoke test of `npm run bench -- soak --quick`: the real CLI starts the real server (child
// process) on the default repository's tiny models and runs every soak client against it for a
// few seconds, precision swap included. Robustness is correctness, so this asserts the soak's
// own targets (no crash, no restart, no failed good request, every bad request refused with a
// 4xx, no KV block held once idle); the memory and latency numbers are reported, not asserted.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport } from '../../bench/harness/types.js';
import type { ActorRow } from '../../bench/scenarios/soak/tally.js';
import { checkWellFormed } from '../unit/bench/xml.js';

const run = promisify(execFile);
const out = mkdtempSync(join(tmpdir(), 'bench-soak-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('npm run bench -- soak --quick', () => {
  it('runs every client, meets the robustness targets and writes results, summary and charts', async () => {
    const args = ['--import', 'tsx', 'bench/cli.ts', 'soak', '--quick', '--duration-secs', '12', '--swap-every-secs', '6', '--out', out];
    const { stdout } = await run(process.execPath, args, { cwd: process.cwd(), maxBuffer: 16 * 2 ** 20 });
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
    expect(report.skipped).toEqual([]);
    const m = report.cases[0]!.metrics!;
    const rows = m['rows'] as ActorRow[];
    const failures = rows.filter((r) => r.failed > 0).map((r) => `${r.actor}: ${JSON.stringify(r.outcomes)}`);
    expect(failures).toEqual([]);
    expect(m['serverCrashed']).toBe(false);
    expect(m['engineRestarts']).toBe(0);
    expect(m['goodRequests']).toBeGreaterThan(0);
    expect(m['badRequests']).toBeGreaterThan(0);
    expect(m['kvUsageAfter']).toBe(0);
    for (const actor of [
      'streaming chat 0',
      'completions with stop strings',
      'embeddings',
      'CNN infer (KServe binary)',
      'bad requests',
      'hang-up streams 0',
      'WebSocket that stops reading',
      'WebSocket sending garbage',
      'precision swap',
    ]) {
      expect(rows.map((r) => r.actor)).toContain(actor);
    }
    expect((m['samples'] as unknown[]).length).toBeGreaterThan(5);
    for (const file of ['soak-rss.svg', 'soak-lag.svg']) checkWellFormed(readFileSync(join(out, file), 'utf8'));
    expect(stdout).toContain('## Targets');
  }, 240_000);
});
